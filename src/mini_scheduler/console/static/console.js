// The mini-scheduler console: reads the JSON API, draws the jobs, a job's history, the next
// 24 hours and the regions, and sends an operator's actions after a confirmation. Text from the
// API is only ever set as textContent, never parsed as HTML.
"use strict";

// the jobs, the regions and an open history; the timeline less often
const REFRESH_MS = 1000 * Number(document.body.dataset.refresh || "10");
const TIMELINE_MS = Math.max(REFRESH_MS, 60000);
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const state = { historyJob: null, historyCursor: null, historyPaged: false, environment: null, busy: false };

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
  return answer;
}

// -- the operator's name and confirmations -----------------------------------------------------

const operatorInput = document.getElementById("operator");
operatorInput.value = localStorage.getItem("mini-scheduler.operator") || "";
operatorInput.addEventListener("change", () => {
  localStorage.setItem("mini-scheduler.operator", operatorInput.value.trim());
});

// Asks for confirmation and an operator name; resolves to {operator, target} or null.
function confirmAction(text, okLabel, targets) {
  const dialog = document.getElementById("confirm");
  const who = document.getElementById("confirm-operator");
  const targetLabel = document.getElementById("confirm-target-label");
  const target = document.getElementById("confirm-target");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  who.value = operatorInput.value.trim();
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
      done({ operator: name, target: targets ? target.value : null });
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
  async ({ operator, target }) => {
    const answer = await api("POST", "/api/scheduler/environment", { active: target, operator });
    const failed = failures(answer.written);
    if (failed.length) throw new Error(`written except in ${failed.join(", ")}: try again`);
    return `Active environment ${target} in every region, set by ${operator}.`;
  }, targets);
});

// -- the jobs ----------------------------------------------------------------------------------

function jobRow(job, now) {
  const next = job.next.length
    ? el("ol", { class: "next" }, job.next.map((f) => el("li", {},
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
      el("button", { type: "button", class: "quiet", dataset: { act: "history", job: job.name } }, "History")));
}

function drawJobs(answer) {
  const now = new Date(answer.now);
  document.getElementById("job-rows").replaceChildren(...answer.jobs.map((job) => jobRow(job, now)));
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
  if (button.dataset.act === "run") {
    return act(`Run ${job} now? It is a firing of its own, run by the active region's ticker ` +
        "(on a region on standby too), recorded with your name.", "Run now",
      async ({ operator }) => {
        const answer = await api("POST", `/api/schedule/${enc}`, { operator });
        return `${job} run by ${operator}: ${answer.status} in ${answer.region} (firing ${answer.firingId}).`;
      });
  }
  const pause = button.dataset.act === "pause";
  return act(pause
      ? `Pause ${job} in every region? Ticks skip it until it is resumed.`
      : `Resume ${job} in every region?`, pause ? "Pause" : "Resume",
    async ({ operator }) => {
      const answer = await api("POST", `/api/schedule/${enc}/${pause ? "pause" : "resume"}`, { operator });
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

function openHistory(job) {
  state.historyJob = job;
  state.historyCursor = null;
  state.historyPaged = false;
  document.getElementById("history-title").textContent = `History of ${job}`;
  document.getElementById("run-rows").replaceChildren();
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
  const [jobs, env] = await Promise.allSettled([api("GET", "/api/schedule"), api("GET", "/api/scheduler/environment")]);
  state.busy = false;
  if (jobs.status === "fulfilled") {
    drawJobs(jobs.value);
    document.getElementById("updated").textContent =
      `as of ${utc(jobs.value.now)} - refreshes every ${REFRESH_MS / 1000} s`;
  }
  else say(`Jobs: ${jobs.reason.message}`, "error");
  if (env.status === "fulfilled") drawRegions(env.value);
  else say(`Regions: ${env.reason.message}`, "error");
  // the newest page of an open history again, unless older runs are shown below it
  if (state.historyJob && !state.historyPaged) loadHistory(false).catch(() => {});
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
