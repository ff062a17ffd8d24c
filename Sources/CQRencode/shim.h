// CQRencode — libqrencode (Debian's libqrencode-dev), for the QR code `screentime web pair`
// prints in the terminal for a phone's camera.
#ifndef CQRENCODE_SHIM_H
#define CQRENCODE_SHIM_H

#include <qrencode.h>

#endif
