// Writes random pi sessions with pi's own SessionManager (@earendil-works/pi-coding-agent
// 1.6.0; Node >= 22.19), each beside what pi itself would send on resume: the oracle
// of tests/test_import_pi_oracle.py (kept apart from tests/import_fixtures, whose
// tests import that whole folder).  Every operation the 1.6.0 API offers is drawn:
// messages of every role and block kind, tool calls with any JSON arguments, model
// and thinking-level changes, branches, branch summaries, compactions, context
// edits, labels, session names, custom entries; odd text (NUL, lone surrogates,
// U+2028, CRLF) included.
//
//   cd <a folder where the package is installed> && \
//     STEPS=25 node make_sessions.mjs <out dir> 12 7 && \
//     HEAVY=1 STEPS=25 node make_sessions.mjs <out dir> 12 8 12
//
// Arguments: out dir, how many sessions, the seed, the first file number.  Writes
// <out>/sNNN.jsonl and <out>/sNNN.expected.json: pi's leaf, its model on resume and
// the messages of its buildSessionContext.  HEAVY draws compactions and context
// edits far more often.
import { mkdirSync, mkdtempSync, writeFileSync, copyFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const OUT = resolve(process.argv[2]);
const N = +(process.argv[3] ?? 200);
let seed = +(process.argv[4] ?? 1);
const FIRST = +(process.argv[5] ?? 0);
const scratch = mkdtempSync(join(tmpdir(), "pi-random-"));
process.env.PI_CODING_AGENT_DIR = scratch;
const { SessionManager } = await import("@earendil-works/pi-coding-agent");
mkdirSync(OUT, { recursive: true });

// mulberry32
function rng() { seed |= 0; seed = (seed + 0x6d2b79f5) | 0; let t = Math.imul(seed ^ (seed >>> 15), 1 | seed); t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }
const ri = (n) => Math.floor(rng() * n);
const pick = (a) => a[ri(a.length)];
const chance = (p) => rng() < p;
let clock = Date.parse("2026-03-01T10:00:00.000Z");
const now = () => (clock += 1 + ri(5000));

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WEIRD = ["", " ", "\n", "héllo wörld", "emoji 🌊🎉", "tab\tand\r\nCRLF", "quote \" back \\ slash", "<summary>x</summary>", "a\u0000nul", "日本語のテキスト", "   leading", "trailing\n\n", "$ ls", "{\"json\":1}", "line1\nline2\nline3", "lone \ud800 hi", "lo \udc00", "pair \ud83c\udf0a ok", "\u2028sep\u2029", "\ufeffbom"];
let ctr = 0;
function str() {
  if (chance(0.25)) return pick(WEIRD) + (chance(0.5) ? ` #${++ctr}` : "");
  const words = ["alpha", "beta", "gamma", "fix", "the", "bug", "in", "tide.go", "please", "run", "tests"];
  let s = ""; const n = 1 + ri(8);
  for (let i = 0; i < n; i++) s += (i ? " " : "") + pick(words);
  return s + ` #${++ctr}`;
}
function jsonVal(depth = 0) {
  const r = ri(depth > 2 ? 5 : 8);
  switch (r) {
    case 0: return str();
    case 1: return pick([0, 1, -1, 42, 3.5, 1e21, 1e-7, 0.1 + 0.2, 2 ** 53 + 2, -0]);
    case 2: return chance(0.5);
    case 3: return null;
    case 4: return pick(["", "x", "ü"]);
    case 5: case 6: { const o = {}; const n = ri(4); for (let i = 0; i < n; i++) o[pick(["a", "path", "command", "z", "0", "n_" + i, "ключ", ""])] = jsonVal(depth + 1); return o; }
    default: { const a = []; const n = ri(4); for (let i = 0; i < n; i++) a.push(jsonVal(depth + 1)); return a; }
  }
}
function args() {
  const r = ri(6);
  if (r === 0) return {};
  if (r === 1) return { command: str() };
  if (r === 2) return { path: "src/" + str(), offset: ri(100), limit: ri(50) };
  const o = {}; const n = 1 + ri(4); for (let i = 0; i < n; i++) o[pick(["a", "b", "cmd", "edits", "x y"])] = jsonVal(1); return o;
}
const usage = () => ({ input: ri(1000), output: ri(500), cacheRead: ri(3), cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const MODELS = [["anthropic", "claude-sonnet-4-5", "anthropic-messages"], ["openai", "gpt-5.1", "openai-responses"], ["anthropic", "claude-opus-4-1", "anthropic-messages"], ["openai", "gpt-4.1", "openai-completions"]];
const textBlocks = () => { const n = 1 + ri(3); const a = []; for (let i = 0; i < n; i++) a.push(chance(0.8) ? { type: "text", text: str() } : { type: "image", data: PNG, mimeType: pick(["image/png", "image/jpeg"]) }); return a; };
const userContent = () => chance(0.5) ? str() : textBlocks();

function genSession(idx) {
  const sm = SessionManager.create("/home/t/proj" + (idx % 3), join(scratch, "s"));
  const ops = [];
  let model = pick(MODELS);
  let pendingCalls = [];
  const nsteps = 5 + ri(+(process.env.STEPS ?? 40));
  const log = (s) => ops.push(s);
  const branchIds = () => sm.getBranch().map((e) => e.id);
  const allIds = () => sm.getEntries().map((e) => e.id);
  const assistant = () => {
    const content = [];
    if (chance(0.4)) content.push(chance(0.15) ? { type: "thinking", thinking: "", thinkingSignature: "RED" + ri(1e6), redacted: true } : { type: "thinking", thinking: str(), ...(chance(0.6) ? { thinkingSignature: "sig" + ri(1e6) } : {}) });
    if (chance(0.7)) content.push({ type: "text", text: str(), ...(chance(0.2) ? { textSignature: "ts" + ri(99) } : {}) });
    const ncalls = chance(0.5) ? 1 + ri(3) : 0;
    const calls = [];
    for (let i = 0; i < ncalls; i++) { const id = pick(["toolu_", "call_", "fc_"]) + ri(1e9) + (chance(0.2) ? "|fc_" + ri(1e6) : ""); const c = { type: "toolCall", id, name: pick(["bash", "read", "edit", "write", "my-tool.x"]), arguments: args() }; if (chance(0.1)) c.thoughtSignature = "th"; content.push(c); calls.push(c); }
    if (chance(0.2) && content.length > 1) content.push({ type: "text", text: str() });
    let stop = calls.length ? "toolUse" : pick(["stop", "stop", "stop", "length"]);
    const extra = {};
    if (chance(0.1)) { stop = "error"; extra.errorMessage = "boom " + ri(100); if (chance(0.5)) content.length = 0; }
    else if (chance(0.08)) { stop = "aborted"; extra.errorMessage = "Request was aborted"; }
    const m = { role: "assistant", content, api: model[2], provider: model[0], model: model[1], usage: usage(), stopReason: stop, timestamp: now(), ...extra };
    const id = sm.appendMessage(m);
    log(`assistant ${stop} calls=${calls.length}`);
    pendingCalls = calls;
    return id;
  };
  // Every session starts with a user prompt and a reply, so the file is written.
  if (chance(0.5)) sm.appendModelChange(model[0], model[1]);
  if (chance(0.3)) sm.appendThinkingLevelChange(pick(["low", "medium", "high"]));
  if (chance(0.2)) sm.appendMessage({ role: "system", content: "You are pi " + ri(9), timestamp: now() });
  sm.appendMessage({ role: "user", content: userContent(), timestamp: now() });
  assistant();
  for (let step = 0; step < nsteps; step++) {
    if (pendingCalls.length && chance(0.85)) {
      // results (maybe not all, maybe out of order)
      const calls = chance(0.85) ? pendingCalls : pendingCalls.slice(0, ri(pendingCalls.length));
      for (const c of calls) {
        let content;
        const r = ri(10);
        if (r === 0) content = [];
        else if (r === 1) content = [{ type: "text", text: str() }, { type: "text", text: str() }];
        else if (r === 2) content = [{ type: "text", text: "Read image" }, { type: "image", data: PNG, mimeType: "image/png" }];
        else if (r === 3) content = [{ type: "image", data: PNG, mimeType: "image/png" }];
        else content = [{ type: "text", text: str() }];
        sm.appendMessage({ role: "toolResult", toolCallId: c.id, toolName: c.name, content, details: chance(0.5) ? { diff: str() } : undefined, isError: chance(0.2), timestamp: now() });
      }
      log(`results ${calls.length}`);
      pendingCalls = [];
      if (chance(0.8)) assistant();
      continue;
    }
    const op = process.env.HEAVY ? pick([0,0,0,8,8,8,18,18,18,19,19,6,7,9,15,22,21,10]) : ri(25);
    try {
      switch (op) {
        case 0: case 1: case 2: case 3:
          sm.appendMessage({ role: "user", content: userContent(), timestamp: now() }); log("user");
          if (chance(0.85)) assistant();
          break;
        case 4: model = pick(MODELS); sm.appendModelChange(model[0], model[1]); log("model_change"); break;
        case 5: sm.appendThinkingLevelChange(pick(["off", "low", "high", "xhigh"])); log("thinking"); break;
        case 6: { const ids = allIds(); const t = pick(ids); sm.branch(t); log(`branch ${t}`); pendingCalls = []; break; }
        case 7: { const ids = allIds(); const t = chance(0.1) ? null : pick(ids); sm.branchWithSummary(t, chance(0.15) ? "" : "Branch summary: " + str(), { readFiles: [] }, chance(0.3), usage()); log(`branchWithSummary ${t}`); pendingCalls = []; break; }
        case 8: { const b = branchIds(); const r = ri(10); const first = r === 0 ? null : r === 1 ? pick(allIds()) : pick(b); sm.appendCompaction(chance(0.1) ? "" : "## Summary\n" + str(), first, ri(50000), { readFiles: [], modifiedFiles: [] }, chance(0.3), usage()); log(`compaction first=${first}`); pendingCalls = []; break; }
        case 9: { const c = ri(5); const content = c === 0 ? "" : c === 1 ? [] : chance(0.5) ? str() : textBlocks(); sm.appendCustomMessageEntry(pick(["note", "reminder"]), content, chance(0.5), chance(0.5) ? { k: 1 } : undefined); log(`custom_message ${JSON.stringify(content).slice(0, 20)}`); break; }
        case 10: { const c = ri(5); const content = c === 0 ? "" : c === 1 ? [] : chance(0.5) ? str() : textBlocks(); sm.appendMessage({ role: "custom", customType: "ext", content, display: chance(0.5), details: undefined, timestamp: now() }); log("custom role"); break; }
        case 11: sm.appendCustomEntry("ext-state", chance(0.5) ? { n: ri(9) } : undefined); log("custom"); break;
        case 12: { const b = branchIds(); sm.appendLabelChange(pick(b), chance(0.8) ? "lbl" + ri(9) : undefined); log("label"); break; }
        case 13: sm.appendSessionInfo("name " + str()); log("session_info"); break;
        case 14: sm.appendUsage("compaction", model[0], model[1], usage(), chance(0.5) ? "note" : undefined); log("usage"); break;
        case 15: case 16: {
          const m = { role: "bashExecution", command: chance(0.9) ? "ls " + str() : "", output: chance(0.2) ? "" : str() + (chance(0.5) ? "\n" : ""), exitCode: pick([0, 0, 1, 127, undefined]), cancelled: chance(0.15), truncated: chance(0.15), timestamp: now() };
          if (m.truncated && chance(0.7)) m.fullOutputPath = "/tmp/out" + ri(99);
          if (chance(0.35)) m.excludeFromContext = true;
          sm.appendMessage(m); log(`bash excl=${!!m.excludeFromContext}`); break;
        }
        case 17: sm.appendMessage({ role: "system", content: "System prompt v" + ri(99), timestamp: now() }); log("system msg"); break;
        case 18: case 19: {
          // context edit of an editable entry on the branch
          const b = sm.getBranch().filter((e) => e.type === "custom_message" || (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)));
          if (!b.length) break;
          const t = pick(b);
          const r = ri(4);
          const rep = r === 0 ? null : r === 1 ? { content: "edited " + str() } : r === 2 ? { content: textBlocks() } : { content: "" };
          sm.appendContextEdit(t.id, rep); log(`context_edit ${t.id} ${JSON.stringify(rep)?.slice(0, 30)}`); break;
        }
        case 20: sm.resetLeaf(); log("resetLeaf"); pendingCalls = []; sm.appendMessage({ role: "user", content: userContent(), timestamp: now() }); assistant(); break;
        case 21: { const id = assistant(); break; }
        case 22: { const t = pick(allIds()); sm.createBranchedSession(t); log(`createBranchedSession ${t}`); pendingCalls = []; break; }
        case 23: { const r = ri(4); const content = r === 0 ? null : r === 1 ? [] : r === 2 ? "" : [{ type: "text", text: "" }]; sm.appendMessage({ role: pick(["user", "user", "toolResult"]), toolCallId: "orph" + ri(9), toolName: "bash", content, isError: false, timestamp: now() }); log(`odd content ${JSON.stringify(content)}`); break; }
        case 24: { // an assistant reply with odd blocks
          const content = [{ type: "text", text: "" }, { type: "thinking", thinking: "" }, { type: "toolCall", id: "", name: "", arguments: {} }, { type: "toolCall", id: "x" + ri(99), name: "t", arguments: pick([[], "str", 5, null, { nested: { deep: [1, { a: null }] } }]) }];
          sm.appendMessage({ role: "assistant", content: content.filter(() => chance(0.6)), api: model[2], provider: model[0], model: model[1], usage: usage(), stopReason: pick(["stop", "toolUse"]), timestamp: now() }); log("odd assistant"); pendingCalls = []; break; }
      }
    } catch (e) { log("ERR " + e.message); }
  }
  // Sometimes end on a branch() without appending: the file's last line is the leaf on resume.
  if (chance(0.1)) { sm.branch(pick(allIds())); log("final branch"); }
  const file = sm.getSessionFile();
  if (!file || !existsSync(file)) return null;
  const name = `s${String(FIRST + idx).padStart(3, "0")}`;
  copyFileSync(file, join(OUT, name + ".jsonl"));
  const re = SessionManager.open(join(OUT, name + ".jsonl"), join(scratch, "o"));
  const ctx = re.buildSessionContext();
  writeFileSync(join(OUT, name + ".expected.json"), JSON.stringify({ leaf: re.getLeafId(), model: ctx.model, messages: ctx.messages }));
  return name;
}

let made = 0;
for (let i = 0; i < N; i++) if (genSession(i)) made++;
console.log(`made ${made}`);
