// The live view of a desktop session's screen: noVNC's client on the
// session's VNC WebSocket (GET /v1/sessions/{id}/desktop/vnc, behind the
// dashboard's login like the rest of the API). It watches, view-only,
// until the person takes control: then the session's VNC server that
// takes input is the one connected, and the mouse and keyboard reach the
// screen. Built apart from app.js, as a module: noVNC awaits at its top
// level, which a classic script cannot.
import RFB from "@novnc/novnc";

export function liveView(box, status, button, id, signal) {
  let rfb = null;
  let control = false;
  const state = { connected: false, control: false, disconnects: 0 };
  window.sandboxdLiveView = state; // for tests: what the view is doing
  const connect = () => {
    if (rfb) rfb.disconnect();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const url = `${scheme}://${location.host}/v1/sessions/${encodeURIComponent(id)}/desktop/vnc${control ? "?control=true" : ""}`;
    const view = new RFB(box, url, { wsProtocols: [] });
    view.viewOnly = !control;
    view.scaleViewport = true;
    view.focusOnClick = control;
    view.addEventListener("connect", () => {
      state.connected = true;
      state.control = control;
      status.textContent = control ? "in control: the mouse and keyboard reach the screen" : "watching (view-only)";
    });
    view.addEventListener("disconnect", (e) => {
      state.connected = false;
      state.disconnects++;
      if (view === rfb) status.textContent = e.detail.clean ? "disconnected" : "the connection failed — reload the page";
    });
    rfb = view;
  };
  button.addEventListener("click", () => {
    control = !control;
    button.textContent = control ? "Give back control" : "Take control";
    connect();
  });
  connect();
  signal.addEventListener("abort", () => { if (rfb) rfb.disconnect(); });
}
