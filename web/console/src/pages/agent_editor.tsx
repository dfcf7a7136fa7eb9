// The agent-file editor: a monospace textarea; JSON is sent as the agent, anything else as {yaml}.
// The server parses and validates YAML, so the console needs no YAML library.

export function agentBody(text: string, setError: (m: string | null) => void): Record<string, unknown> | null {
  const t = text.trim();
  if (!t) { setError("The agent file is empty."); return null; }
  if (t.startsWith("{")) {
    try { const v = JSON.parse(t); setError(null); return v; } catch (e) {
      setError(`This looks like JSON but does not parse: ${(e as Error).message}. Fix it, or write YAML instead.`);
      return null;
    }
  }
  setError(null);
  return { yaml: text };
}

export function AgentEditor({ value, onInput, parseError, label }: { value: string; onInput: (v: string) => void; parseError: string | null; label: string }) {
  // Tab inserts two spaces (YAML indents), Escape then Tab leaves the field as usual.
  const onKeyDown = (e: KeyboardEvent) => {
    const ta = e.currentTarget as HTMLTextAreaElement;
    if (e.key === "Tab" && !e.shiftKey && !ta.dataset.escaped) {
      e.preventDefault();
      const { selectionStart: s, selectionEnd: end } = ta;
      const next = ta.value.slice(0, s) + "  " + ta.value.slice(end);
      onInput(next);
      requestAnimationFrame(() => { ta.selectionStart = ta.selectionEnd = s + 2; });
    } else if (e.key === "Escape") {
      ta.dataset.escaped = "1";
    } else {
      delete ta.dataset.escaped;
    }
  };
  return (
    <div class="field">
      <label for="agent-file">{label}</label>
      <textarea id="agent-file" class="mono editor" rows={16} spellcheck={false} value={value}
                aria-describedby="agent-file-hint" onInput={(e) => onInput(e.currentTarget.value)} onKeyDown={onKeyDown} />
      <p class="hint" id="agent-file-hint">The agent file in YAML (JSON works too): name, model_class, instructions, tools. Tab indents; press Escape, then Tab, to leave the editor.</p>
      {parseError && <p class="field-error" role="alert">{parseError}</p>}
    </div>
  );
}
