// The thread's realtime channel with pusher-js (Heddle's built-in Pusher-protocol server, or
// hosted Pusher). pusher-js reconnects by itself and resubscribes; every (re)subscription calls
// onSubscribed, where the chat catches up on what it missed while the socket was down.
import Pusher from "pusher-js";

const EVENTS = ["message.created", "message.delta", "run.updated", "thread.deleted"];

export function connect(api, config, threadId, { onEvent, onState, onSubscribed, onRefused }) {
  const pusher = new Pusher(config.key, {
    cluster: config.cluster || "mt1",
    wsHost: config.ws_host,
    wsPort: config.ws_port,
    wssPort: config.ws_port,
    forceTLS: !!config.force_tls,
    enabledTransports: ["ws", "wss"],
    disableStats: true,
    channelAuthorization: {
      // Through the widget's own request(): a fresh session token, and one retry after a 401.
      customHandler: ({ socketId, channelName }, callback) => {
        api.request("POST", "/v1/loom/realtime/auth", { body: { socket_id: socketId, channel_name: channelName } })
          .then((data) => callback(null, { auth: data.auth }), (err) => callback(err, null));
      },
    },
  });
  pusher.connection.bind("state_change", ({ current }) => onState(current));
  const channel = pusher.subscribe(`private-thread-${threadId}`);
  channel.bind("pusher:subscription_succeeded", () => onSubscribed());
  channel.bind("pusher:subscription_error", (status) => onRefused(status));
  for (const name of EVENTS) channel.bind(name, (data) => onEvent(name, data));
  return {
    close() {
      pusher.unbind_all();
      pusher.disconnect();
    },
    get state() {
      return pusher.connection.state;
    },
  };
}
