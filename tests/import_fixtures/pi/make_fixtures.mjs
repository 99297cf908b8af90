// Writes the pi fixtures of tests/test_import*.py with pi's own SessionManager
// (@earendil-works/pi-coding-agent 1.6.0; Node >= 22.19), so every line is in the
// shape pi writes.  The conversation is made up for these tests.
//
//   cd <a folder where the package is installed> && node make_fixtures.mjs <out dir>
//
// Writes <out>/full.jsonl, <out>/cut.jsonl and <out>/full.expected.json (what pi
// itself says of the full session: its leaf, the ids on the leaf's branch, and the
// roles of the context it would send).

import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const out = resolve(process.argv[2] ?? ".");
const scratch = mkdtempSync(join(tmpdir(), "pi-fixtures-"));
process.env.PI_CODING_AGENT_DIR = scratch;
const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const CWD = "/home/ana/code/tide";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let clock = Date.now();
const now = () => (clock += 7);
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

function usage(input, output, cacheRead = 0, cacheWrite = 0) {
	return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost: { input: 0.001, output: 0.002, cacheRead: 0, cacheWrite: 0, total: 0.003 } };
}
function reply(content, stopReason, extra = {}) {
	return { role: "assistant", content, api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage: usage(20, 50, 3000, 100), stopReason, timestamp: now(), ...extra };
}
function result(id, name, text, isError = false, more = []) {
	return { role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text }, ...more], details: {}, isError, timestamp: now() };
}

// ── full ──
mkdirSync(out, { recursive: true });
const sm = SessionManager.create(CWD, join(scratch, "s"));
sm.appendModelChange("anthropic", "claude-sonnet-4-5");
sm.appendThinkingLevelChange("medium");
sm.appendMessage({ role: "system", content: "", sections: { preamble: "You are a coding assistant.", project_context: "<project_context>\n<project_instructions path=\"/home/ana/code/tide/AGENTS.md\">\nRun `make check` before committing.\n</project_instructions>\n</project_context>" }, toolsAdded: [{ name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" } } } }], timestamp: now() });
await sleep(2);
const u1 = sm.appendMessage({ role: "user", content: "Pourquoi le calcul des marées échoue-t-il ? 🌊", timestamp: now() });
await sleep(2);
sm.appendMessage(reply([
	{ type: "thinking", thinking: "Lancer les tests d'abord.", thinkingSignature: "SIGtide001==" },
	{ type: "text", text: "Je lance les tests." },
	{ type: "toolCall", id: "toolu_tide_01", name: "bash", arguments: { command: "make check", timeout: 60 } },
], "toolUse", { responseId: "msg_tide_01", rawStopReason: "tool_use" }));
await sleep(2);
sm.appendMessage(result("toolu_tide_01", "bash", "FAIL tide_test.go:41: expected 6h12m, got 6h13m\n\nCommand exited with code 1", true));
await sleep(2);
sm.appendMessage(reply([
	{ type: "toolCall", id: "toolu_tide_02", name: "read", arguments: { path: "chart.png" } },
	{ type: "toolCall", id: "toolu_tide_03", name: "read", arguments: { path: "tide.go", offset: 30, limit: 20 } },
], "toolUse"));
await sleep(2);
sm.appendMessage(result("toolu_tide_02", "read", "Read image file [image/png]", false, [{ type: "image", data: PNG, mimeType: "image/png" }]));
sm.appendMessage(result("toolu_tide_03", "read", "func period() time.Duration {\n\treturn 12*time.Hour + 25*time.Minute + 1*time.Second\n}"));
await sleep(2);
const a3 = sm.appendMessage(reply([{ type: "text", text: "La période a une seconde de trop : 12 h 25 min, pas 12 h 25 min 1 s." }], "stop", { rawStopReason: "end_turn" }));
sm.appendLabelChange(a3, "cause");
await sleep(2);
sm.appendMessage({ role: "user", content: [{ type: "text", text: "Voici le graphique corrigé, ça va ?" }, { type: "image", data: PNG, mimeType: "image/png" }], timestamp: now() });
sm.appendModelChange("openai", "gpt-5.1-codex");
await sleep(2);
sm.appendMessage({ role: "assistant", content: [
	{ type: "thinking", thinking: "**Graph**\n\nLooks fine.", thinkingSignature: JSON.stringify({ type: "reasoning", id: "rs_tide_1", summary: [], encrypted_content: "gAAAAtideENC==" }) },
	{ type: "text", text: "Le graphique est correct.", textSignature: JSON.stringify({ v: 1, id: "msg_tide_2", phase: "final_answer" }) },
], api: "openai-responses", provider: "openai", model: "gpt-5.1-codex", usage: usage(4000, 30), stopReason: "stop", timestamp: now() });
await sleep(2);
sm.appendMessage({ role: "bashExecution", command: "git status --short", output: " M tide.go\n", exitCode: 0, cancelled: false, truncated: false, timestamp: now() });
sm.appendCustomMessageEntry("reminder", "Uncommitted changes in tide.go.", true, { files: ["tide.go"] });
sm.appendSessionInfo("Marées");
await sleep(2);
// A branch: back to the answer that found the cause, with a summary of what is left behind.
sm.branchWithSummary(a3, "Looked at the chart with another model; abandoned.", { readFiles: ["chart.png"], modifiedFiles: [] }, false, usage(500, 20));
await sleep(2);
const u3 = sm.appendMessage({ role: "user", content: "Corrige la période et ajoute un test.", timestamp: now() });
await sleep(2);
sm.appendMessage(reply([
	{ type: "thinking", thinking: "", thinkingSignature: "REDACTEDtide==", redacted: true },
	{ type: "toolCall", id: "toolu_tide_04", name: "edit", arguments: { path: "tide.go", edits: [{ oldText: "+ 1*time.Second", newText: "" }] } },
], "toolUse"));
sm.appendMessage(result("toolu_tide_04", "edit", "Successfully replaced 1 block(s) in tide.go."));
await sleep(2);
sm.appendMessage(reply([{ type: "text", text: "Corrigé ; `make check` passe." }], "stop"));
await sleep(2);
sm.appendCompaction("## Goal\nFix the tide period.\n## Done\n- Removed the extra second.", u3, 21000, { readFiles: ["tide.go"], modifiedFiles: ["tide.go"] }, false, usage(6000, 300));
await sleep(2);
sm.appendMessage({ role: "user", content: "Commit, s'il te plaît.", timestamp: now() });
await sleep(2);
sm.appendMessage(reply([{ type: "toolCall", id: "toolu_tide_05", name: "bash", arguments: { command: "git commit -am 'Fix tide period'" } }], "toolUse"));
sm.appendMessage(result("toolu_tide_05", "bash", "[main 7e1d2c3] Fix tide period\n 1 file changed"));
await sleep(2);
sm.appendMessage(reply([{ type: "text", text: "C'est fait : 7e1d2c3." }], "stop"));
sm.appendLabelChange(u1, "début");
const full = sm.getSessionFile();
copyFileSync(full, join(out, "full.jsonl"));
const ctx = sm.buildSessionContext();
writeFileSync(join(out, "full.expected.json"), JSON.stringify({ leaf: sm.getLeafId(), branch: sm.getBranch().map((e) => e.id), contextRoles: ctx.messages.map((m) => m.role) }, null, 1) + "\n");

// ── cut: the session ends in a tool call that has no result (the process died) ──
const cm = SessionManager.create("/home/ana/code/reef", join(scratch, "s"));
cm.appendModelChange("anthropic", "claude-sonnet-4-5");
cm.appendMessage({ role: "user", content: "Supprime le cache puis reconstruis.", timestamp: now() });
cm.appendMessage(reply([
	{ type: "text", text: "Je supprime le cache." },
	{ type: "toolCall", id: "toolu_reef_01", name: "bash", arguments: { command: "rm -rf .cache && make" } },
], "toolUse"));
copyFileSync(cm.getSessionFile(), join(out, "cut.jsonl"));
console.log(`wrote ${out}/full.jsonl, cut.jsonl, full.expected.json`);
