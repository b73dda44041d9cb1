// The mini-scheduler console: reads the JSON API, draws the jobs, a job's history and pending
// retries, the backfills in progress, the next 24 hours and the regions, and sends an operator's
// actions after a confirmation (or a form: a new schedule, a backfill). Text from the API is only
// ever set as textContent, never parsed as HTML.
"use strict";

// the jobs, the regions and an open history; the timeline less often
const REFRESH_MS = 1000 * Number(document.body.dataset.refresh || "10");
const TIMELINE_MS = Math.max(REFRESH_MS, 60000);
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const state = {
  historyJob: null, historyCursor: null, historyPaged: false, environment: null, busy: false,
  jobNames: new Set(), // the jobs the list shows: an open history reads its job's settings only then
  following: new Map(), // backfill id -> {job, total, started}: said when it is done
};

// -- small helpers ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function utc(iso) {
  return iso ? iso.replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, "Z") : "-";
}

function wall(firing) {
  // "Mon 09:00 CET" from the local ISO text, whatever the browser's own zone
  const local = firing.local;
  const day = new Date(firing.utc).toLocaleDateString("en-GB", {
    weekday: "short", timeZone: firing.zone,
  });
  return `${day} ${local.slice(0, 10)} ${local.slice(11, 19)} ${firing.abbreviation || ""}`.trim();
}

function spread(firing) {
  // a firing its job's jitter or window placed: its own instant, on hover
  return firing.scheduled
    ? { title: `its firing of ${utc(firing.scheduled)}, started ${firing.spreadSeconds} s later` }
    : {};
}

function took(ms) {
  if (ms === null || ms === undefined) return "-";
  if (ms < 10000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function ago(iso, now) {
  if (!iso) return "";
  const seconds = Math.max(0, Math.round((now - new Date(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

function statusBadge(status) {
  const name = status || "NONE";
  return el("span", { class: `status status-${name.toLowerCase()}` }, status || "no run yet");
}

// "us-east-1 (AccessDeniedException: ...)" for each region an action failed in
function failures(outcomes) {
  return (outcomes || []).filter((o) => !o.ok).map((o) => (o.error ? `${o.region} (${o.error})` : o.region));
}

function say(text, kind) {
  const box = document.getElementById("messages");
  // a message already shown (a region failing at every refresh) is moved up, not repeated
  for (const shown of box.querySelectorAll(".message")) {
    if (shown.classList.contains(kind || "info") && shown.firstChild.textContent === text) shown.remove();
  }
  const note = el("p", { class: `message ${kind || "info"}`, role: kind === "error" ? "alert" : null },
    text, el("button", { type: "button", class: "dismiss", "aria-label": "dismiss",
      onclick: (e) => e.target.parentElement.remove() }, "\u00d7"));
  box.prepend(note);
  while (box.children.length > 4) box.lastChild.remove();
  if (kind !== "error") setTimeout(() => note.remove(), 12000);
}

async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    init.headers["X-CSRF-Token"] = csrf;
    init.body = JSON.stringify(body || {});
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new Error("the console does not answer (is it still running?)");
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch (err) {
    answer = null;
  }
  if (!response.ok) {
    const reason = answer && answer.error ? answer.error : `HTTP ${response.status}`;
    throw new Error(reason);
  }
  if (method !== "GET") auditErrors(answer);
  return answer;
}

// an action done whose audit record was not written: said, the action stands (docs/audit.md)
function auditErrors(answer) {
  const regions = answer && Array.isArray(answer.regions) ? answer.regions : [];
  const found = [answer, ...regions];
  for (const part of found) {
    if (part && part.auditError) say(`Done, but not in the audit trail: ${part.auditError}`, "error");
  }
}

// -- the operator's name, a reason, and confirmations ----------------------------------------------

// ``body`` with the operator's reason, when one was given (the server checks it, as the CLI's
// --reason: it goes in the action's audit record, and on a manual run)
function withReason(body, reason) {
  return reason ? { ...body, reason } : body;
}

const operatorInput = document.getElementById("operator");
operatorInput.value = localStorage.getItem("mini-scheduler.operator") || "";
operatorInput.addEventListener("change", () => {
  localStorage.setItem("mini-scheduler.operator", operatorInput.value.trim());
});

// Asks for confirmation, an operator name and an optional reason; resolves to
// {operator, target, reason} or null.
function confirmAction(text, okLabel, targets) {
  const dialog = document.getElementById("confirm");
  const who = document.getElementById("confirm-operator");
  const why = document.getElementById("confirm-reason");
  const targetLabel = document.getElementById("confirm-target-label");
  const target = document.getElementById("confirm-target");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  who.value = operatorInput.value.trim();
  why.value = ""; // a reason is one action's
  targetLabel.hidden = !targets;
  target.replaceChildren(...(targets || []).map((t) => el("option", { value: t.value }, t.label)));
  return new Promise((resolve) => {
    const cancel = document.getElementById("confirm-cancel");
    const done = (value) => {
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("close", onClose);
      resolve(value);
    };
    const onCancel = () => dialog.close("cancel");
    const onClose = () => {
      if (dialog.returnValue !== "ok") return done(null);
      const name = who.value.trim();
      operatorInput.value = name;
      localStorage.setItem("mini-scheduler.operator", name);
      done({ operator: name, target: targets ? target.value : null, reason: why.value.trim() });
    };
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("close", onClose);
    dialog.returnValue = "";
    dialog.showModal();
    (who.value ? document.getElementById("confirm-ok") : who).focus();
  });
}

async function act(text, okLabel, send, targets) {
  const answer = await confirmAction(text, okLabel, targets);
  if (!answer) return;
  try {
    const result = await send(answer);
    say(result, "ok");
  } catch (err) {
    say(err.message, "error");
  }
  refresh();
}

// -- forms: a new runtime schedule, a backfill ---------------------------------------------------

let formSend = null; // what the open form sends: (values, operator, reason) -> the message to show

function formField(spec) {
  const attrs = {
    id: `field-${spec.name}`, name: spec.name, required: spec.required || null,
    placeholder: spec.placeholder || null, spellcheck: "false", autocomplete: "off",
  };
  let input;
  if (spec.type === "textarea") input = el("textarea", { ...attrs, rows: "3" });
  else if (spec.type === "select") {
    input = el("select", attrs, spec.options.map((o) =>
      el("option", { value: o.value, selected: o.selected || null }, o.label)));
  } else input = el("input", { ...attrs, type: spec.type || "text", min: spec.min, max: spec.max });
  return el("label", {}, spec.label, input);
}

// A form in a dialog, with the operator's name: a refusal is shown in it, and it stays open.
function openForm(title, text, fields, okLabel, send) {
  document.getElementById("form-title").textContent = title;
  document.getElementById("form-text").textContent = text;
  document.getElementById("form-fields").replaceChildren(...fields.map(formField));
  document.getElementById("form-ok").textContent = okLabel;
  document.getElementById("form-ok").disabled = false;
  document.getElementById("form-error").hidden = true;
  document.getElementById("form-operator").value = operatorInput.value.trim();
  document.getElementById("form-reason").value = "";
  formSend = send;
  document.getElementById("form").showModal();
  document.querySelector("#form-fields [name]").focus();
}

document.getElementById("form-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const send = formSend;
  if (!send) return;
  const ok = document.getElementById("form-ok");
  const error = document.getElementById("form-error");
  const values = {};
  for (const input of document.querySelectorAll("#form-fields [name]")) values[input.name] = input.value.trim();
  const operator = document.getElementById("form-operator").value.trim();
  const reason = document.getElementById("form-reason").value.trim();
  operatorInput.value = operator;
  localStorage.setItem("mini-scheduler.operator", operator);
  ok.disabled = true;
  error.hidden = true;
  try {
    const message = await send(values, operator, reason);
    document.getElementById("form").close();
    say(message, "ok");
    refresh();
  } catch (err) {
    error.textContent = err.message;
    error.hidden = false;
  } finally {
    ok.disabled = false;
  }
});
document.getElementById("form-cancel").addEventListener("click", () => document.getElementById("form").close());
document.getElementById("form").addEventListener("close", () => { formSend = null; });

// A region to act in, when the console looks at more than one (the active one first chosen).
function regionFields() {
  const env = state.environment;
  if (!env || env.regions.length < 2) return [];
  const active = env.activeRegions[0];
  return [{ name: "region", label: "Region", type: "select", options: env.regions.map((r) => ({
    value: r.region, label: r.region === active ? `${r.region} (active)` : r.region, selected: r.region === active,
  })) }];
}

function jsonObject(text, name) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${name} is not JSON: ${err.message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${name} must be a JSON object, e.g. {"day": "monday"}`);
  }
  return value;
}

const FORM_KEYS = ["name", "at", "cron", "timezone", "service", "parameters"]; // the form's own fields

document.getElementById("new-schedule").addEventListener("click", () => {
  openForm("New runtime schedule",
    "A job made while the scheduler runs, beside cron.yaml's: once at an instant, or on a Quartz " +
    "cron statement. It is kept in one region's store (the active region's unless you pick one); " +
    "a name of cron.yaml cannot be taken.", [
      { name: "name", label: "Name", required: true, placeholder: "one-off-report" },
      { name: "at", label: "At: once, at this instant (UTC)", placeholder: "2026-12-24T18:00:00Z" },
      { name: "cron", label: "Or cron: a Quartz statement", placeholder: "0 0 9 ? * MON-FRI" },
      { name: "timezone", label: "Its zone (for cron)", placeholder: "UTC" },
      { name: "service", label: "Service: a function, flow://, sqs://, sns://, events://, ecs:// or an https:// URL", required: true },
      { name: "parameters", label: "Parameters (a JSON object)", type: "textarea", placeholder: '{"day": "monday"}' },
      { name: "more", label: "More of cron.yaml's keys (a JSON object: overlap, retry, timeout, input, ecs, http...)",
        type: "textarea", placeholder: '{"overlap": "skip", "retry": {"retries": 2}}' },
      ...regionFields(),
    ], "Create",
  async (v, operator, reason) => {
    const entry = { name: v.name, service: v.service };
    for (const key of ["at", "cron", "timezone"]) if (v[key]) entry[key] = v[key];
    if (v.parameters) entry.parameters = jsonObject(v.parameters, "parameters");
    const more = v.more ? jsonObject(v.more, "more keys") : {};
    const own = Object.keys(more).filter((key) => key in entry || FORM_KEYS.includes(key));
    if (own.length) throw new Error(`more keys: ${own.join(", ")} has a field of its own above`);
    Object.assign(entry, more);
    const body = withReason({ schedules: [entry], operator }, reason);
    if (v.region) body.region = v.region;
    const answer = await api("POST", "/api/schedules", body);
    const made = answer.created[0];
    return `Schedule ${made.name} created in ${answer.region} by ${operator}: ` +
      `next firing ${utc(made.nextFiring)}.`;
  });
});

function startBackfill(job) {
  openForm(`Backfill ${job}`,
    `Run ${job}'s firings of a past window again, each once (a firing that ran is not run ` +
    "again), a bounded number a minute, by the region's ticker (the active region's unless you pick one).", [
      { name: "from", label: "From (UTC)", required: true, placeholder: "2026-11-30T00:00:00Z" },
      { name: "to", label: "To (UTC, not included, not after now)", required: true, placeholder: "2026-11-30T06:00:00Z" },
      { name: "rate", label: "Firings a minute", type: "number", min: "1", max: "1000", placeholder: "60" },
      ...regionFields(),
    ], "Start backfill",
  async (v, operator, reason) => {
    const body = withReason({ from: v.from, to: v.to, operator }, reason);
    if (v.rate) body.rate = Number(v.rate);
    if (v.region) body.region = v.region;
    const answer = await api("POST", `/api/schedule/${encodeURIComponent(job)}/backfill`, body);
    state.following.set(answer.id, { job, total: answer.total, started: Date.now() });
    return `Backfill of ${job} started in ${answer.region} by ${operator}: ` +
      `${answer.total} firing${answer.total === 1 ? "" : "s"}, ${answer.rate} a minute.`;
  });
}

// -- the regions ---------------------------------------------------------------------------------

function drawRegions(env) {
  state.environment = env;
  const list = document.getElementById("region-list");
  list.replaceChildren(...env.regions.map((r) => {
    if (!r.ok) {
      return el("li", { class: "region region-error", dataset: { region: r.region } },
        el("strong", {}, r.region), " cannot be read: ", r.error || "");
    }
    const mode = r.mode || "unknown";
    return el("li", { class: `region region-${mode}`, dataset: { region: r.region } },
      el("strong", {}, r.region),
      el("span", { class: "env" }, r.environment || "?"),
      el("span", { class: `mode mode-${mode}` }, mode === "active" ? "ACTIVE" : mode),
      el("span", { class: "holds" }, `holds ${r.active}${r.persistent ? "" : " (default)"}`),
      el("span", { class: "where" }, r.where || r.store || ""));
  }));
  const problem = document.getElementById("problem");
  problem.hidden = !env.problem;
  problem.textContent = env.problem || "";
}

document.getElementById("failover").addEventListener("click", () => {
  const env = state.environment;
  if (!env) return;
  const targets = env.known.map((name) => {
    const region = env.regions.find((r) => r.environment && r.environment.toLowerCase() === name.toLowerCase());
    return { value: name, label: region ? `${name} (${region.region})` : name };
  });
  act(`Make one environment active in every region (${env.regions.map((r) => r.region).join(", ")}). ` +
      `Now active: ${env.active}.`, "Fail over",
  async ({ operator, target, reason }) => {
    const body = withReason({ active: target, operator }, reason);
    const answer = await api("POST", "/api/scheduler/environment", body);
    const failed = failures(answer.written);
    if (failed.length) throw new Error(`written except in ${failed.join(", ")}: try again`);
    return `Active environment ${target} in every region, set by ${operator}.`;
  }, targets);
});

// -- the jobs ----------------------------------------------------------------------------------

function jobRow(job, now) {
  const next = job.next.length
    ? el("ol", { class: "next" }, job.next.map((f) => el("li", spread(f),
        el("span", { class: "local" }, wall(f)), el("span", { class: "utc" }, utc(f.utc)))))
    : el("span", { class: "muted" }, job.enabled ? "never again" : "disabled");
  const last = job.lastRun
    ? el("div", { class: "last" }, statusBadge(job.lastRun.status),
        el("span", { class: "took" }, took(job.lastRun.durationMs)),
        el("span", { class: "muted" }, `${job.lastRun.region}, ${ago(job.lastRun.started, now)}`))
    : el("span", { class: "muted" }, "no run yet");
  const paused = job.paused
    ? el("span", { class: "badge paused", title: `in ${job.pausedIn.join(", ")}` },
        `paused by ${job.pausedBy.join(", ")}`)
    : el("span", { class: "badge running" }, job.enabled ? "scheduled" : "disabled");
  const pauseButton = job.paused
    ? el("button", { type: "button", class: "action", dataset: { act: "resume", job: job.name } }, "Resume")
    : el("button", { type: "button", class: "action", dataset: { act: "pause", job: job.name } }, "Pause");
  return el("tr", { dataset: { job: job.name }, class: job.paused ? "is-paused" : null },
    el("th", { scope: "row", "data-label": "Job" },
      el("button", { type: "button", class: "link", dataset: { act: "history", job: job.name } }, job.name),
      job.kind !== "cron.yaml" ? el("span", { class: "kind" }, job.kind) : null,
      job.description ? el("div", { class: "muted" }, job.description) : null,
      el("div", { class: "service" }, job.service)),
    el("td", { "data-label": "Schedule" },
      el("div", { class: "words" }, job.words || job.statement),
      el("code", {}, job.statement), el("span", { class: "zone" }, job.zone)),
    el("td", { "data-label": "Next firings" }, next),
    el("td", { "data-label": "Last run" }, last),
    el("td", { "data-label": "State" }, paused),
    el("td", { class: "actions" },
      el("button", { type: "button", class: "action primary", dataset: { act: "run", job: job.name } }, "Run now"),
      pauseButton,
      el("button", { type: "button", class: "quiet", dataset: { act: "history", job: job.name } }, "History"),
      job.kind === "cron.yaml"
        ? el("button", { type: "button", class: "quiet", dataset: { act: "backfill", job: job.name } }, "Backfill...")
        : el("button", { type: "button", class: "quiet danger",
          dataset: { act: "delete", job: job.name, region: job.region } }, "Delete")));
}

function drawJobs(answer) {
  const now = new Date(answer.now);
  document.getElementById("job-rows").replaceChildren(...answer.jobs.map((job) => jobRow(job, now)));
  state.jobNames = new Set(answer.jobs.map((job) => job.name));
  const paused = answer.jobs.filter((j) => j.paused).length;
  document.getElementById("job-count").textContent =
    `${answer.jobs.length} job${answer.jobs.length === 1 ? "" : "s"}${paused ? `, ${paused} paused` : ""}`;
}

document.getElementById("job-rows").addEventListener("click", (event) => {
  const button = event.target.closest("button[data-act]");
  if (!button) return;
  const job = button.dataset.job;
  const enc = encodeURIComponent(job);
  if (button.dataset.act === "history") return openHistory(job);
  if (button.dataset.act === "backfill") return startBackfill(job);
  if (button.dataset.act === "delete") {
    const region = button.dataset.region;
    return act(`Delete the runtime schedule ${job} in ${region}? Its next firing is dropped; ` +
        "its runs stay in the history.", "Delete",
      async ({ operator, reason }) => {
        const answer = await api("DELETE", `/api/schedules/${enc}`, withReason({ operator, region }, reason));
        return `Schedule ${job} deleted from ${answer.region} by ${operator}.`;
      });
  }
  if (button.dataset.act === "run") {
    return act(`Run ${job} now? It is a firing of its own, run by the active region's ticker ` +
        "(on a region on standby too), recorded with your name.", "Run now",
      async ({ operator, reason }) => {
        const answer = await api("POST", `/api/schedule/${enc}`, withReason({ operator }, reason));
        return `${job} run by ${operator}: ${answer.status} in ${answer.region} (firing ${answer.firingId}).`;
      });
  }
  const pause = button.dataset.act === "pause";
  return act(pause
      ? `Pause ${job} in every region? Ticks skip it until it is resumed.`
      : `Resume ${job} in every region?`, pause ? "Pause" : "Resume",
    async ({ operator, reason }) => {
      const path = `/api/schedule/${enc}/${pause ? "pause" : "resume"}`;
      const answer = await api("POST", path, withReason({ operator }, reason));
      const failed = failures(answer.regions);
      if (failed.length) throw new Error(`${job} not ${pause ? "paused" : "resumed"} in ${failed.join(", ")}: try again`);
      return `${job} ${pause ? "paused" : "resumed"} by ${operator} in every region.`;
    });
});

// -- a job's history -------------------------------------------------------------------------------

function runRow(run) {
  const attempt = run.attempt > 1 ? ` (attempt ${run.attempt})` : "";
  return el("tr", { dataset: { firing: run.firingId } },
    el("td", { "data-label": "Scheduled" }, utc(run.scheduled)),
    el("td", { "data-label": "Status" }, statusBadge(run.status), attempt),
    el("td", { "data-label": "Took" }, took(run.durationMs)),
    el("td", { "data-label": "Region" }, run.region),
    el("td", { "data-label": "Started" }, utc(run.started)),
    el("td", { "data-label": "Note", class: "note" }, run.note === "-" ? "" : run.note));
}

async function loadHistory(append) {
  const job = state.historyJob;
  if (!job) return;
  const params = new URLSearchParams({ limit: "20" });
  if (append && state.historyCursor) params.set("cursor", state.historyCursor);
  const answer = await api("GET", `/api/schedule/${encodeURIComponent(job)}/history?${params}`);
  if (job !== state.historyJob) return;
  if (!append && state.historyPaged) return; // older runs were asked for meanwhile: keep them
  const rows = document.getElementById("run-rows");
  const drawn = answer.runs.map(runRow);
  if (append) rows.append(...drawn);
  else rows.replaceChildren(...drawn);
  if (!rows.children.length) {
    rows.append(el("tr", {}, el("td", { colspan: "6", class: "muted" }, "No runs yet.")));
  }
  state.historyCursor = answer.next;
  document.getElementById("history-more").hidden = !answer.next;
  for (const region of answer.unread) say(`${region.region} could not be read: ${region.error}`, "error");
}

// the job's failed runs' next attempts, waiting in each region (shown above its runs)
async function loadRetries() {
  const job = state.historyJob;
  if (!job) return;
  const answer = await api("GET", `/api/schedule/${encodeURIComponent(job)}/retries`);
  if (job !== state.historyJob) return;
  document.getElementById("retry-list").replaceChildren(...answer.retries.map((r) =>
    el("li", { dataset: { run: r.runId } }, `attempt ${r.attempt} of ${r.firingId}, due ${utc(r.due)}`,
      el("span", { class: "muted" }, ` in ${r.region}`))));
  document.getElementById("retries").hidden = !answer.retries.length;
  for (const region of answer.unread) say(`${region.region} could not be read: ${region.error}`, "error");
}

// the job's overlap policy in full, and its firings waiting now (read for the open job only)
const OVERLAP = {
  allow: "a firing runs beside the job's open run",
  skip: "a firing is skipped while the job's run is open",
  buffer_one: "a firing waits for the open run's end, at most 1 waiting (a later one is skipped)",
  cancel_other: "a firing stops the open run, which is recorded FAILED, and starts",
};

function overlapText(job) {
  const says = job.overlap === "buffer_all"
    ? `each firing waits for the open run's end, started oldest first, at most ${job.maxBuffered} ` +
      "waiting (the excess skipped)"
    : OVERLAP[job.overlap] || job.overlap;
  const read = job.waitingIn.filter((r) => !r.error);
  const each = read.length > 1 ? ` (${read.map((r) => `${r.region} ${r.count}`).join(", ")})` : "";
  const waiting = job.waiting === null ? "firings waiting: unknown" : `${job.waiting} waiting now${each}`;
  const unread = job.waitingIn.filter((r) => r.error).map((r) => `; ${r.region} unread: ${r.error}`);
  return `Overlap ${job.overlap}: ${says}; ${waiting}${unread.join("")}${capsText(job, read)}`;
}

// its caps (max_running, a pool): each cap's places taken now, over the regions read
function capsText(job, read) {
  const taken = (key) => read.reduce((sum, r) => sum + ((r.running || {})[key] || 0), 0);
  const caps = [];
  if (job.maxRunning > 1) caps.push(`max_running ${job.maxRunning}: ${taken(`job:${job.name}`)} open`);
  if (job.pool) caps.push(`pool ${job.pool.name}: ${taken(`pool:${job.pool.name}`)} of ${job.pool.size} open`);
  return caps.length ? `; ${caps.join("; ")}` : "";
}

async function loadOverlap() {
  const job = state.historyJob;
  const line = document.getElementById("history-overlap");
  if (!job || !state.jobNames.has(job)) {
    line.hidden = true; // a name with runs but no definition (a deleted schedule) has none
    return;
  }
  const answer = await api("GET", `/api/schedule/${encodeURIComponent(job)}`);
  if (job !== state.historyJob) return;
  line.textContent = overlapText(answer);
  line.dataset.overlap = answer.overlap;
  line.dataset.waiting = answer.waiting === null ? "" : String(answer.waiting);
  line.hidden = false;
}

function openHistory(job) {
  state.historyJob = job;
  state.historyCursor = null;
  state.historyPaged = false;
  document.getElementById("history-title").textContent = `History of ${job}`;
  document.getElementById("run-rows").replaceChildren();
  document.getElementById("retry-list").replaceChildren();
  document.getElementById("retries").hidden = true;
  document.getElementById("history-overlap").hidden = true;
  loadOverlap().catch((err) => say(err.message, "error"));
  loadRetries().catch((err) => say(err.message, "error"));
  const panel = document.getElementById("history");
  panel.hidden = false;
  // scrolled to once its rows are drawn: before, the page may be too short to bring it up
  loadHistory(false)
    .catch((err) => say(err.message, "error"))
    .finally(() => {
      if (state.historyJob === job) panel.scrollIntoView({ behavior: "smooth", block: "start" });
    });
}

document.getElementById("history-close").addEventListener("click", () => {
  state.historyJob = null;
  document.getElementById("history").hidden = true;
});
document.getElementById("history-more").addEventListener("click", () => {
  state.historyPaged = true; // the refreshes leave the older runs shown
  loadHistory(true).catch((err) => say(err.message, "error"));
});

// -- backfills in progress ----------------------------------------------------------------------------

// ``read``: when the answer was asked for; a backfill followed since before then and no longer
// listed has had its last firing dispatched
function drawBackfills(answer, read) {
  const items = [];
  const listed = new Set();
  for (const region of answer.regions) {
    if (!region.ok) {
      say(`Backfills of ${region.region} could not be read: ${region.error}`, "error");
      continue;
    }
    for (const b of region.backfills) {
      listed.add(b.id);
      items.push(el("li", { class: "backfill", dataset: { backfill: b.id, job: b.job } },
        el("strong", {}, b.job),
        el("progress", { max: String(b.total), value: String(b.done) }),
        el("span", { class: "done" }, `${b.done} of ${b.total} dispatched`),
        el("span", { class: "muted" }, `${utc(b.from)} to ${utc(b.to)}, next due ${utc(b.nextDue)}, ` +
          `${b.rate} a minute, by ${b.operator} in ${region.region}`)));
    }
  }
  document.getElementById("backfill-list").replaceChildren(...items);
  document.getElementById("backfill-none").hidden = items.length > 0;
  if (answer.regions.some((r) => !r.ok)) return;
  for (const [id, b] of state.following) {
    if (listed.has(id) || b.started > read) continue;
    state.following.delete(id);
    say(`Backfill of ${b.job} done: all ${b.total} firing${b.total === 1 ? "" : "s"} dispatched or found run.`, "ok");
  }
}

// -- the audit trail -----------------------------------------------------------------------------------

function change(record) {
  const show = (state) => (state === undefined || state === null ? "-" : JSON.stringify(state));
  const keys = new Set([...Object.keys(record.before || {}), ...Object.keys(record.after || {})]);
  if (record.before && record.after && keys.size === 1) {
    const [key] = keys;
    return `${key}: ${show(record.before[key])} -> ${show(record.after[key])}`;
  }
  if (!record.before && !record.after) return "";
  const text = `${show(record.before)} -> ${show(record.after)}`;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function drawAudit(answer) {
  for (const region of answer.unread) say(`Audit of ${region.region}: ${region.error}`, "error");
  const rows = answer.records.map((r) => el("tr", { dataset: { audit: r.action, auditJob: r.job || "" } },
    el("td", { "data-label": "When" }, utc(r.at)),
    el("td", { "data-label": "Region" }, r.region),
    el("td", { "data-label": "Action" }, r.action),
    el("td", { "data-label": "Job" }, r.job || r.subject || ""),
    el("td", { "data-label": "Who", title: r.identity || "" }, r.operator),
    el("td", { "data-label": "Change" }, change(r)),
    el("td", { "data-label": "Reason", class: "note" }, r.reason || "")));
  document.getElementById("audit-rows").replaceChildren(...rows);
  document.getElementById("audit-none").hidden = rows.length > 0;
}

// -- the next 24 hours -------------------------------------------------------------------------------

function drawTimeline(answer) {
  const from = new Date(answer.from).getTime();
  const span = new Date(answer.to).getTime() - from;
  const at = (iso) => `${((new Date(iso).getTime() - from) / span) * 100}%`;
  const axis = el("div", { class: "axis" });
  for (let h = 0; h <= 24; h += 3) {
    const tick = new Date(from + (span * h) / 24);
    const label = el("span", { class: "hour" }, `${tick.toISOString().slice(11, 16)}Z`);
    label.style.left = `${(h / 24) * 100}%`;
    axis.append(label);
  }
  const rows = answer.rows.map((row) => {
    const track = el("div", { class: "track" });
    if (row.dense && row.firings.length) {
      // too many to draw one by one: a band from the first firing to the window's end
      const band = el("span", { class: "band", title: `${row.job}: more than ${row.firings.length} firings` });
      band.style.left = at(row.firings[0]);
      band.style.right = "0";
      track.append(band);
    }
    for (const firing of row.dense ? [] : row.firings) {
      const mark = el("span", { class: "mark", title: `${row.job} ${utc(firing)}` });
      mark.style.left = at(firing);
      track.append(mark);
    }
    for (const change of row.clockChanges) {
      const dst = el("span", { class: "dst", title: `${change.text} at ${utc(change.at)}` },
        el("span", { class: "dst-label" }, change.text));
      dst.style.left = at(change.at);
      track.append(dst);
    }
    const count = row.dense ? `${row.firings.length}+` : `${row.firings.length}`; // firings in 24 h
    return el("div", { class: "lane", dataset: { job: row.job } },
      el("span", { class: "lane-name", title: row.zone }, row.job,
        el("span", { class: "muted" }, ` ${count}`)),
      track);
  });
  document.getElementById("timeline-body").replaceChildren(
    el("div", { class: "lane axis-lane" }, el("span", { class: "lane-name" }), axis), ...rows);
}

// -- refreshing ------------------------------------------------------------------------------------

async function refresh() {
  if (state.busy) return;
  state.busy = true;
  const read = Date.now();
  const [jobs, env, backfills, audit] = await Promise.allSettled([
    api("GET", "/api/schedule"), api("GET", "/api/scheduler/environment"), api("GET", "/api/backfills"),
    api("GET", "/api/audit?hours=168"),
  ]);
  state.busy = false;
  if (jobs.status === "fulfilled") {
    drawJobs(jobs.value);
    document.getElementById("updated").textContent =
      `as of ${utc(jobs.value.now)} - refreshes every ${REFRESH_MS / 1000} s`;
  }
  else say(`Jobs: ${jobs.reason.message}`, "error");
  if (env.status === "fulfilled") drawRegions(env.value);
  else say(`Regions: ${env.reason.message}`, "error");
  if (backfills.status === "fulfilled") drawBackfills(backfills.value, read);
  else say(`Backfills: ${backfills.reason.message}`, "error");
  if (audit.status === "fulfilled") drawAudit(audit.value);
  else say(`Audit: ${audit.reason.message}`, "error");
  // the newest page of an open history again, unless older runs are shown below it
  if (state.historyJob && !state.historyPaged) loadHistory(false).catch(() => {});
  if (state.historyJob) loadRetries().catch(() => {});
  if (state.historyJob) loadOverlap().catch(() => {});
}

async function refreshTimeline() {
  try {
    drawTimeline(await api("GET", "/api/timeline?hours=24"));
  } catch (err) {
    say(`Timeline: ${err.message}`, "error");
  }
}

refresh();
refreshTimeline();
setInterval(refresh, REFRESH_MS);
setInterval(refreshTimeline, TIMELINE_MS);
