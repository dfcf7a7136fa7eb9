// Errors a person can read: what happened and what they can do, never a stack trace, a bare code
// or operator text (a failed run's message). The code stays available to the page (the
// `heddle-chat:error` event) for its own logs; a failed run's reference is its id, which the
// console's runs page opens.

const BY_CODE = {
  insufficient_credits: "The assistant is unavailable right now: this service has run out of credits. Please try again later.",
  unauthorized: "Your chat session has expired. Reload the page, or log in again.",
  origin_not_allowed: "This website is not allowed to use this chat (its address is not on the chat service's allowed list).",
  rate_limited: "You are sending messages too quickly. Wait a moment and try again.",
  run_active: "The assistant is still working on your last message. Wait for it, or press Stop.",
  outcome_first: "First tell the assistant whether the action above went through (or press Stop).",
  run_terminal: "That reply has already finished.",
  forbidden: "This conversation belongs to someone else. Reload the page.",
  subject_required: "The chat could not tell who you are. Reload the page, or log in again.",
  realtime_disabled: "Live updates are off; the chat checks for replies every few seconds.",
  cancelled: "Stopped.",
  model_error: "The assistant could not finish its reply. Try again in a moment.",
  idempotency_key_reused: "That message was already sent.",
  payload_too_large: "That message is too long. Shorten it and try again.",
  agent_not_found: "This chat is not available right now (its assistant is not set up).",
  service_unavailable: "The chat service is starting up or busy. Try again in a moment.",
  interrupted: "Replaced by your newer message.",
  max_turns_exceeded: "The assistant took too many steps on this one and stopped. Try asking differently.",
  max_duration_exceeded: "The assistant took too long on this one and stopped. Try again.",
  internal_error: "The chat service had a problem. Try again in a moment.",
  model_cannot_see_images: "This assistant cannot look at images. Remove the image, or describe it in words.",
  too_many_attachments: "Too many files in one message. Send some of them in the next one.",
  attachment_in_use: "One of those files was already sent. Attach it again to send it once more.",
};

/** A sentence for a ChatError (or anything thrown). */
export function describe(err) {
  if (!err) return "Something went wrong.";
  if (err.kind === "network") {
    return "Can't reach the chat service. Check your internet connection, then try again.";
  }
  if (err.kind === "token") {
    if (err.status === 401 || err.status === 403) return "You are not logged in any more. Log in again to keep chatting.";
    return "Couldn't sign you in to the chat: the website's sign-in service did not answer. Try again in a moment, or reload the page.";
  }
  if (err.kind === "run") {
    // The run's error message is the operator's (a URL refused, a setting to change): it stays in
    // the trace and the console. The person gets a sentence and a reference to quote.
    const text = BY_CODE[err.code] || "The assistant could not finish its reply. Try again in a moment.";
    return err.code === "cancelled" || err.code === "interrupted" || !err.reference
      ? text : `${text} (Reference: ${err.reference})`;
  }
  if (err.code === "rate_limited" && err.retryAfter) {
    return `You are sending messages too quickly. Try again in ${err.retryAfter} seconds.`;
  }
  if (BY_CODE[err.code]) return BY_CODE[err.code];
  if (err.status >= 500) return BY_CODE.internal_error;
  if (err.code === "invalid_request") return "The chat service could not accept that message. Try rephrasing it.";
  return "Something went wrong. Try again in a moment.";
}
