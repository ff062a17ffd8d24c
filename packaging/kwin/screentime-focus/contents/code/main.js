// Screen Time's focus script for KWin (5 and 6): at each change of the window in front, and every
// 5 s besides, calls org.screentime.Focus.Activated on the session bus with that window's pid ("0"
// for none). The agent's relay (`screentime-shield --focus-relay`, started by the agent in the
// session) owns the name; until it does, calls go nowhere and every connected app counts. The
// agent believes a window in front for 15 s after it was last told: a script turned off leaves
// no word standing.
"use strict";

function tellFocus(window) {
    var pid = window && window.pid > 0 ? String(window.pid) : "0";
    callDBus("org.screentime.Focus", "/org/screentime/Focus", "org.screentime.Focus", "Activated", pid);
}

function active() {
    return workspace.activeWindow !== undefined ? workspace.activeWindow : workspace.activeClient;
}

if (workspace.windowActivated) {
    workspace.windowActivated.connect(tellFocus);
} else {
    workspace.clientActivated.connect(tellFocus);
}
tellFocus(active());

if (typeof QTimer !== "undefined") {
    var heartbeat = new QTimer();
    heartbeat.interval = 5000;
    heartbeat.timeout.connect(function () { tellFocus(active()); });
    heartbeat.start();
}
