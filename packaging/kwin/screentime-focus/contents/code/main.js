// Screen Time's focus script for KWin (5 and 6): at each change of the window in front, calls
// org.screentime.Focus.Activated on the session bus with that window's pid ("0" for none). The
// agent's relay (`screentime-shield --focus-relay`, started by the agent in the session) owns
// the name; until it does, calls go nowhere and every connected app counts.
"use strict";

function tellFocus(window) {
    var pid = window && window.pid > 0 ? String(window.pid) : "0";
    callDBus("org.screentime.Focus", "/org/screentime/Focus", "org.screentime.Focus", "Activated", pid);
}

if (workspace.windowActivated) {
    workspace.windowActivated.connect(tellFocus);
    tellFocus(workspace.activeWindow);
} else {
    workspace.clientActivated.connect(tellFocus);
    tellFocus(workspace.activeClient);
}
