// Writes the pi context-edit fixture of tests/test_import_pi.py with pi's own
// SessionManager (@earendil-works/pi-coding-agent 1.6.0; Node >= 22.19).  The
// conversation is made up for these tests.
//
//   cp make_edit_fixtures.mjs <a folder where the package is installed>/ && cd there &&
//   node make_edit_fixtures.mjs <out dir>
//
// Writes <out>/edits.jsonl and <out>/edits.expected.json: the context pi builds
// (each message's role and text) at the file's leaf, whose path runs through two
// context edits (a tool output redacted, a prompt dropped), and at the leaf of a
// branch that leaves before them; and edits-more.jsonl (a compaction keeping from
// an entry an edit leaves out, which a later edit restores) with its context at
// the leaf and before the restoring edit.

import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const out = resolve(process.argv[2] ?? ".");
const scratch = mkdtempSync(join(tmpdir(), "pi-fixtures-"));
process.env.PI_CODING_AGENT_DIR = scratch;
const { SessionManager } = await import("@earendil-works/pi-coding-agent");

let clock = Date.parse("2026-12-05T09:00:00.000Z");
const now = () => (clock += 1000);
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const reply = (content, stopReason) => ({ role: "assistant", content, api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage, stopReason, timestamp: now() });
const text = (m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b) => b.text ?? b.thinking ?? (b.type === "toolCall" ? `call ${b.name}` : `[${b.type}]`)).join("|"));
const context = (sm) => sm.buildSessionContext().messages.map((m) => [m.role, text(m)]);

mkdirSync(out, { recursive: true });
const sm = SessionManager.create("/home/ana/code/vault", join(scratch, "s"));
sm.appendModelChange("anthropic", "claude-sonnet-4-5");
sm.appendMessage({ role: "user", content: "Show me the environment.", timestamp: now() });
sm.appendMessage(reply([{ type: "toolCall", id: "toolu_env_1", name: "bash", arguments: { command: "env" } }], "toolUse"));
const secret = sm.appendMessage({ role: "toolResult", toolCallId: "toolu_env_1", toolName: "bash", content: [{ type: "text", text: "HOME=/home/ana\nAWS_SECRET_ACCESS_KEY=SUPERSECRET123" }], details: {}, isError: false, timestamp: now() });
sm.appendMessage(reply([{ type: "text", text: "Done." }], "stop"));
const password = sm.appendMessage({ role: "user", content: "my password is hunter2", timestamp: now() });
const noted = sm.appendMessage(reply([{ type: "text", text: "Noted." }], "stop"));
// A branch that leaves before the edits: it keeps what was said.
sm.appendMessage({ role: "user", content: "Another idea.", timestamp: now() });
sm.appendMessage(reply([{ type: "text", text: "Sure." }], "stop"));
const other = { leaf: sm.getLeafId(), context: context(sm) };
sm.branch(noted);
sm.appendContextEdit(secret, { content: "[redacted]" });
sm.appendContextEdit(password, null);
sm.appendMessage({ role: "user", content: "What next?", timestamp: now() });
sm.appendMessage(reply([{ type: "text", text: "Tests." }], "stop"));
copyFileSync(sm.getSessionFile(), join(out, "edits.jsonl"));
const expected = { leaf: sm.getLeafId(), context: context(sm), other };
writeFileSync(join(out, "edits.expected.json"), JSON.stringify(expected, null, 1) + "\n");

// ── edits-more: a compaction that keeps from the entry an edit leaves out, then the
// same entry restored by a later edit (the latest edit of an entry wins) ──
const mm = SessionManager.create("/home/ana/code/vault", join(scratch, "s"));
mm.appendModelChange("anthropic", "claude-sonnet-4-5");
mm.appendMessage({ role: "user", content: "A one", timestamp: now() });
mm.appendMessage(reply([{ type: "text", text: "a reply" }], "stop"));
const b = mm.appendMessage({ role: "user", content: "B two", timestamp: now() });
mm.appendMessage(reply([{ type: "text", text: "b reply" }], "stop"));
mm.appendModelChange("anthropic", "claude-opus-4-1");
mm.appendMessage({ role: "user", content: "C three", timestamp: now() });
mm.appendMessage(reply([{ type: "text", text: "c reply" }], "stop"));
mm.appendCompaction("SUMMARY", b, 9000, { readFiles: [], modifiedFiles: [] }, false);
mm.appendContextEdit(b, null);
mm.appendMessage({ role: "user", content: "after", timestamp: now() });
mm.appendMessage(reply([{ type: "text", text: "after reply" }], "stop"));
const dropped = { leaf: mm.getLeafId(), context: context(mm) };
mm.appendContextEdit(b, { content: "B restored" });
mm.appendMessage({ role: "user", content: "last", timestamp: now() });
mm.appendMessage(reply([{ type: "text", text: "last reply" }], "stop"));
copyFileSync(mm.getSessionFile(), join(out, "edits-more.jsonl"));
const more = { leaf: mm.getLeafId(), context: context(mm), dropped };
writeFileSync(join(out, "edits-more.expected.json"), JSON.stringify(more, null, 1) + "\n");
console.log(`wrote ${out}/edits.jsonl, edits-more.jsonl and their .expected.json`);
