// memstream inspector: loads server-rendered HTML fragments into the page. No framework, nothing fetched
// from elsewhere. The API key (if any) stays in this tab's sessionStorage and goes out as a Bearer token.
"use strict";

const $ = (sel) => document.querySelector(sel);
const KEY = "memstream-api-key";
let busy = 0;

function headers(extra) {
  const key = sessionStorage.getItem(KEY);
  return Object.assign(key ? { Authorization: "Bearer " + key } : {}, extra || {});
}

function status(text) { $("#status").textContent = text || ""; }

async function load(target, url, options) {
  const el = typeof target === "string" ? $(target) : target;
  busy += 1; document.body.dataset.busy = busy;
  el.classList.add("loading");
  try {
    const r = await fetch(url, Object.assign({}, options, { headers: headers((options || {}).headers) }));
    const body = await r.text();
    if (r.status === 401 || r.status === 403) {
      el.innerHTML = '<p class="error">' + (r.status === 401 ? "This server needs an API key: enter one above."
        : "This API key may not read that.") + "</p>";
      status(r.status === 401 ? "API key needed" : "not allowed");
    } else if (!r.ok) {
      el.innerHTML = '<p class="error">HTTP ' + r.status + "</p><pre></pre>";
      el.querySelector("pre").textContent = body.slice(0, 2000);
    } else {
      el.innerHTML = body;
    }
    return r.ok;
  } catch (err) {
    el.innerHTML = '<p class="error"></p>';
    el.querySelector("p").textContent = "Cannot reach the server: " + err;
    return false;
  } finally {
    el.classList.remove("loading");
    busy -= 1; document.body.dataset.busy = busy;
  }
}

function chatPath() { return "/ui/chats/" + encodeURIComponent($("#chat").value); }

function showChat() {
  const chat = $("#chat").value;
  if (!chat) return;
  history.replaceState(null, "", "#chat=" + encodeURIComponent(chat));
  $("#trace").innerHTML = "";
  load("#timeline", chatPath() + "/timeline");
  load("#memories", chatPath() + "/memories");
  load("#graph", chatPath() + "/graph");
}

async function loadChats() {
  const wanted = decodeURIComponent((location.hash.match(/chat=([^&]*)/) || [])[1] || "");
  const ok = await load("#chat", "/ui/chats" + (wanted ? "?selected=" + encodeURIComponent(wanted) : ""));
  if (ok) { status(""); showChat(); }
}

function ask(event) {
  event.preventDefault();
  const form = new FormData($("#ask"));
  const body = { query: form.get("query"), mode: form.get("mode"), k: Number(form.get("k") || 8) };
  load("#trace", chatPath() + "/query", {
    method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" },
  });
}

function highlight(event, on) {
  const row = event.target.closest("[data-sources]");
  if (!row) return;
  for (const id of row.dataset.sources.split(" ")) {
    const msg = document.getElementById("msg-" + id);
    if (msg) msg.classList.toggle("hl", on);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("#key").value = sessionStorage.getItem(KEY) || "";
  $("#keyform").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $("#key").value.trim();
    if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
    loadChats();
  });
  $("#chat").addEventListener("change", showChat);
  $("#ask").addEventListener("submit", ask);
  document.addEventListener("click", (e) => {
    const el = e.target.closest("[data-get]");
    if (el) { e.preventDefault(); load(el.dataset.target, el.dataset.get); }
  });
  document.addEventListener("change", (e) => {
    if (!e.target.classList.contains("kind-filter")) return;
    for (const row of document.querySelectorAll('tr.mem[data-kind="' + e.target.value + '"]')) {
      row.hidden = !e.target.checked;
    }
  });
  document.addEventListener("mouseover", (e) => highlight(e, true));
  document.addEventListener("mouseout", (e) => highlight(e, false));
  loadChats();
});
