// The operator's page: polls /api/v1/dashboard and draws it; no library, no network beyond
// the server that sent the page.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("access_token");
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const POLL_MS = 2000;
  const COLORS = ["#2f6fdf", "#d9822b", "#1d9a6c", "#b5479b", "#7a5cc4", "#c23b3b", "#2b9bb0", "#8a6d3b", "#5b8a1e"];
  const METHODS = ["exact", "canonical", "shingle", "near", "item"];
  let samples = [];
  let openCluster = null;
  let memberCursor = null;
  // "pages", or "items" for a state of items (item mode): its wording, and no page-only parts
  let mode = "pages";
  const pageTitle = document.title;

  async function getJSON(path) {
    const response = await fetch(path, { headers: headers, cache: "no-store" });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
    return body;
  }

  const fmt = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"));
  const el = (id) => document.getElementById(id);

  function setText(id, text) { el(id).textContent = text; }

  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function clusterTable(id, rows, columns) {
    const body = el(id).querySelector("tbody");
    body.replaceChildren();
    for (const item of rows) {
      const row = document.createElement("tr");
      row.className = "cluster-row";
      row.dataset.cluster = item.cluster;
      for (const column of columns) cell(row, column(item), column.cls);
      row.addEventListener("click", () => showCluster(item.cluster));
      body.appendChild(row);
    }
  }

  function lineChart(canvas, series, legendId) {
    const ctx = canvas.getContext("2d");
    const w = canvas.width, h = canvas.height, pad = 40;
    ctx.clearRect(0, 0, w, h);
    const points = series.flatMap((s) => s.points);
    if (points.length < 2) { ctx.fillStyle = "#6b7785"; ctx.fillText("waiting for data…", pad, h / 2); return; }
    const x0 = Math.min(...points.map((p) => p[0])), x1 = Math.max(...points.map((p) => p[0]));
    const top = Math.max(1, ...points.map((p) => p[1]));
    const x = (t) => pad + ((t - x0) / Math.max(1e-9, x1 - x0)) * (w - pad - 10);
    const y = (v) => h - 20 - (v / top) * (h - 40);
    ctx.strokeStyle = "#d8dee6"; ctx.fillStyle = "#6b7785"; ctx.font = "11px sans-serif";
    for (const frac of [0, 0.5, 1]) {
      ctx.beginPath(); ctx.moveTo(pad, y(top * frac)); ctx.lineTo(w - 10, y(top * frac)); ctx.stroke();
      const tick = top * frac;
      ctx.fillText(top < 10 ? tick.toFixed(1) : fmt(Math.round(tick)), 2, y(tick) + 4);
    }
    series.forEach((s, i) => {
      ctx.strokeStyle = COLORS[i % COLORS.length]; ctx.lineWidth = 2; ctx.beginPath();
      s.points.forEach((p, j) => (j ? ctx.lineTo(x(p[0]), y(p[1])) : ctx.moveTo(x(p[0]), y(p[1]))));
      ctx.stroke();
    });
    const legend = el(legendId);
    legend.replaceChildren(...series.map((s, i) => {
      const span = document.createElement("span");
      span.innerHTML = '<i style="background:' + COLORS[i % COLORS.length] + '"></i>';
      span.appendChild(document.createTextNode(s.name));
      return span;
    }));
  }

  function perMinute(key) {
    const points = [];
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1], b = samples[i], dt = b.time - a.time;
      if (dt > 0) points.push([b.time, Math.max(0, (key(b) - key(a)) * 60 / dt)]);
    }
    return points;
  }

  function sizeChart(canvas, distribution) {
    const ctx = canvas.getContext("2d");
    const w = canvas.width, h = canvas.height;
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px sans-serif";
    if (!distribution.length) { ctx.fillStyle = "#6b7785"; ctx.fillText("no clusters yet", 40, h / 2); return; }
    const top = Math.log10(Math.max(...distribution.map((d) => d.clusters)) + 1);
    const bar = (w - 50) / distribution.length;
    distribution.forEach((d, i) => {
      const height = (Math.log10(d.clusters + 1) / top) * (h - 45);
      ctx.fillStyle = COLORS[0];
      ctx.fillRect(40 + i * bar + 4, h - 25 - height, bar - 8, height);
      ctx.fillStyle = "#1d2733";
      ctx.fillText(fmt(d.clusters), 40 + i * bar + 6, h - 28 - height);
      ctx.fillStyle = "#6b7785";
      ctx.fillText(d.size, 40 + i * bar + 6, h - 10);
    });
  }

  function applyMode(data) {
    const items = data.mode === "items";
    mode = items ? "items" : "pages";
    document.body.classList.toggle("items-mode", items);
    document.title = items ? "neardup — item clusters" : pageTitle;
    for (const node of document.querySelectorAll("[data-items]")) {
      if (node.dataset.pages === undefined) node.dataset.pages = node.textContent;
      node.textContent = items ? node.dataset.items : node.dataset.pages;
    }
    if (items && data.label_field) {
      for (const node of document.querySelectorAll("th.label-column")) node.textContent = data.label_field;
    }
  }

  function render(data) {
    applyMode(data);
    const items = mode === "items";
    const noun = items ? "items" : "documents";
    samples = samples.concat(data.samples).slice(-4096);
    const last = samples[samples.length - 1];
    if (last) {
      setText("documents", fmt(last.documents));
      setText("clusters", fmt(last.clusters));
      setText("documents-in-clusters", fmt(last.documents_in_clusters));
      setText("largest-cluster", fmt(last.largest_cluster));
      setText("contained", fmt(last.contained));
      setText("dead-letters", fmt(last.dead_letters));
      const earlier = samples.find((s) => s.time >= last.time - 30) || last;
      const rate = last.time > earlier.time ? (last.documents - earlier.documents) / (last.time - earlier.time) : 0;
      setText("throughput", fmt(Math.round(rate)));
    }
    lineChart(el("growth-chart"), [
      { name: noun, points: samples.map((s) => [s.time, s.documents]) },
      { name: noun + " in clusters", points: samples.map((s) => [s.time, s.documents_in_clusters]) },
      { name: "clusters", points: samples.map((s) => [s.time, s.clusters]) },
    ], "growth-legend");
    lineChart(el("rate-chart"), [
      { name: "merges", points: perMinute((s) => s.merges) },
      { name: "splits", points: perMinute((s) => s.splits || 0) },
    ].concat(
      items
        ? [{ name: "matched items", points: perMinute((s) => s.duplicates.item || 0) }]
        : METHODS.map((m) => ({ name: m + " duplicates", points: perMinute((s) => s.duplicates[m]) })).concat([
          // versions = latest: re-fetched urls whose content changed, and urls deleted
          { name: "changed", points: perMinute((s) => s.changed || 0) },
          { name: "removed", points: perMinute((s) => s.removed || 0) },
        ])
    ), "rate-legend");
    sizeChart(el("size-chart"), data.size_distribution);
    const first = (item) => (item.first && item.first.url) || "";
    const id = (item) => item.cluster;
    const size = (item) => fmt(item.size);
    // in item mode, a cluster's label (its merged record's name); its first item's id without one
    const url = (item) => (items && item.label) || first(item);
    url.cls = items ? "url cluster-label" : "url";
    clusterTable("largest", data.largest, [id, size, url]);
    clusterTable("growing", data.growing, [id, (item) => "+" + fmt(item.joined), size, url]);
    if (data.window_seconds) setText("window", "(last " + data.window_seconds + " s)");
    setText("updated", new Date(data.now * 1000).toLocaleTimeString());
  }

  async function showCluster(cluster, more) {
    const after = more && memberCursor ? "&after=" + memberCursor : "";
    const data = await getJSON("api/v1/clusters/" + cluster + "?limit=50" + after);
    const list = el("members");
    if (!more) { list.replaceChildren(); el("versions-box").hidden = true; }
    openCluster = data.cluster;
    memberCursor = data.next;
    el("detail").hidden = false;
    setText("detail-cluster", data.cluster);
    setText("detail-label", data.label || "");
    el("detail-label").hidden = !data.label;
    setText("detail-size", fmt(data.size) + (mode === "items" ? " items" : " documents"));
    for (const member of data.members) {
      const item = document.createElement("li");
      if (mode === "items") {
        // an item has no versions to show: its id, and its name
        const id = document.createElement("span");
        id.className = "member";
        id.textContent = member.url;
        item.appendChild(id);
        if (member.label) item.appendChild(document.createTextNode(" · " + member.label));
        list.appendChild(item);
        continue;
      }
      const button = document.createElement("button");
      button.type = "button"; button.className = "link member";
      button.textContent = member.url;
      button.addEventListener("click", () => showVersions(member.url));
      item.appendChild(button);
      if (member.fetched_at) item.appendChild(document.createTextNode(" · " + member.fetched_at));
      list.appendChild(item);
    }
    el("more-members").hidden = !memberCursor;
  }

  async function showVersions(url) {
    const data = await getJSON("api/v1/history?url=" + encodeURIComponent(url));
    setText("versions-url", url);
    const body = el("versions").querySelector("tbody");
    body.replaceChildren();
    for (const v of data.versions) {
      const row = document.createElement("tr");
      cell(row, v.fetched_at || "—");
      cell(row, v.id);
      cell(row, v.cluster);
      cell(row, v.resemblance_to_previous === null ? "—" : v.resemblance_to_previous.toFixed(3));
      body.appendChild(row);
    }
    el("versions-box").hidden = false;
  }

  el("more-members").addEventListener("click", () => openCluster && showCluster(openCluster, true));

  async function poll() {
    const since = samples.length ? samples[samples.length - 1].time : 0;
    try {
      render(await getJSON("api/v1/dashboard?since=" + since));
      el("status").textContent = "live"; el("status").className = "status live";
    } catch (error) {
      el("status").textContent = String(error.message || error); el("status").className = "status down";
    }
    setTimeout(poll, POLL_MS);
  }
  poll();
})();
