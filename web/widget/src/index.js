// window.HeddleChat: mount a chat with a Heddle agent in any element (direct mode).
//
//   <script src="https://heddle.example.com/widget/heddle-chat.js"></script>
//   HeddleChat.mount(document.getElementById("chat"), {
//     agent: "agent_…",
//     getToken: async () => (await (await fetch("/api/heddle/session-token", {method: "POST"})).json()).data,
//   });
//
// docs/widget.md has every option, event and CSS variable.
import { Chat } from "./chat.js";

// The Heddle server this script came from: the default baseUrl.
const scriptOrigin = (() => {
  try {
    return new URL(document.currentScript.src).origin;
  } catch {
    return window.location.origin;
  }
})();

const mounted = new WeakMap();

function mount(element, options = {}) {
  if (typeof element === "string") element = document.querySelector(element);
  if (!(element instanceof HTMLElement)) throw new TypeError("HeddleChat.mount: the first argument must be an element");
  if (!options.agent || !/^agent_/.test(options.agent)) throw new TypeError("HeddleChat.mount: options.agent must be an agent id (agent_…)");
  if (typeof options.getToken !== "function") throw new TypeError("HeddleChat.mount: options.getToken must be a function returning a session token");
  if (mounted.has(element)) mounted.get(element).unmount();
  const baseUrl = String(options.baseUrl || scriptOrigin).replace(/\/+$/, "");
  const chat = new Chat(element, options, baseUrl);
  const ready = chat.start();
  const handle = {
    /** Remove the widget, close its socket and stop its timers. */
    unmount() {
      chat.destroy();
      mounted.delete(element);
    },
    /** Send a message as if typed. */
    send(text) {
      chat.view.input.value = String(text);
      chat.submit();
    },
    /** Stop the reply being written (cancels the run). */
    cancel: () => chat.cancel(),
    /** Put the keyboard focus in the message box. */
    focus: () => chat.view.input.focus(),
    /** Subscribe to an event (ready, message, delta, run, approval, outcome, connection, error); returns an unsubscribe function. */
    on: (name, fn) => chat.on(name, fn),
    /** Resolves once history is shown (errors are shown in the widget, never thrown here). */
    ready,
    get threadId() {
      return chat.threadId;
    },
    get run() {
      return chat.run;
    },
  };
  mounted.set(element, handle);
  return handle;
}

window.HeddleChat = Object.freeze({ mount, version: __VERSION__ });
