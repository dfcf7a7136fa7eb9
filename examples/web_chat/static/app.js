// The page's side of the embed: how this site gets a Heddle session token for its logged-in
// user (its own mint endpoint, behind its own session cookie), then one HeddleChat.mount call.
const element = document.getElementById("chat");

async function getToken() {
  const response = await fetch("/api/heddle/session-token", {
    method: "POST",
    credentials: "same-origin",
    headers: { "X-Requested-With": "heddle-chat" },
  });
  if (!response.ok) {
    const error = new Error(`the mint endpoint answered ${response.status}`);
    error.status = response.status; // 401: the site's login has ended
    throw error;
  }
  return (await response.json()).data; // {token, expires_in, subject_ref}
}

window.chat = window.HeddleChat.mount(element, {
  agent: element.dataset.agent,
  baseUrl: element.dataset.heddle,
  getToken,
  title: "Acme Bank assistant",
  placeholder: "Ask about your balance or a transfer…",
  memory: true, // "What I remember": the person sees and deletes what the assistant keeps
});

// On a phone the examples start folded (the page's CSS shows their summary only there).
if (window.matchMedia("(max-width: 600px)").matches) {
  const details = document.querySelector(".intro details");
  if (details) details.open = false;
}
