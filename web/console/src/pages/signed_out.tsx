// No session: say how an operator gets in (a one-time login link from the CLI).
import { useEffect } from "preact/hooks";

export function SignedOut() {
  useEffect(() => { document.title = "Sign in · Heddle console"; }, []);
  return (
    <main class="center" id="main">
      <div class="signin card">
        <p class="brand-line"><span class="logo" aria-hidden="true" /> Heddle console</p>
        <h1>You are not signed in</h1>
        <p>The console has no passwords. An operator signs in with a one-time login link, printed by the
          <code>heddle</code> command on the server:</p>
        <pre class="code">heddle operator create --email you@example.com</pre>
        <p>If you already are an operator, ask for a new link:</p>
        <pre class="code">heddle operator login-link --email you@example.com</pre>
        <p class="muted small">A link works once and for 15 minutes. Open it in this browser and press
          <strong> Sign in</strong>. Sessions last 12 hours from your last visit.</p>
      </div>
    </main>
  );
}
