// Follows running Spark applications: polls /api/v1/apps/<id>/remaining every 2 s and
// redraws each application's progress and an SVG chart of the time left.
"use strict";
(function () {
  var API = "/api/v1";
  var POLL_MS = 2000;
  var SVG_NS = "http://www.w3.org/2000/svg";
  var list = document.getElementById("apps-list");
  var template = document.getElementById("app-card");
  var text = document.getElementById("apps").value;

  function lines(value) {
    return value.split("\n").map(function (l) { return l.trim(); }).filter(Boolean).map(function (l) {
      var parts = l.split(/\s+/);
      return { url: parts[0], id: parts[1] || null };
    });
  }

  function getJSON(path) {
    return fetch(path, { headers: { "Accept": "application/json" } }).then(function (response) {
      return response.json().then(function (body) {
        if (!response.ok) { throw new Error(body.error || ("HTTP " + response.status)); }
        return body;
      });
    });
  }

  function card(url, id) {
    var node = template.content.firstElementChild.cloneNode(true);
    node.querySelector(".name").textContent = id || url;
    node.querySelector(".where").textContent = url;
    node.setAttribute("data-url", url);
    if (id) { node.setAttribute("data-app-id", id); }
    list.appendChild(node);
    return node;
  }

  function problem(node, message) {
    var p = node.querySelector(".problem");
    p.textContent = message;
    p.hidden = !message;
  }

  function seconds(value) {
    if (value === null || value === undefined) { return "—"; }
    if (value >= 3600) { return (value / 3600).toFixed(1) + " h"; }
    if (value >= 120) { return (value / 60).toFixed(1) + " min"; }
    return value.toFixed(1) + " s";
  }

  function counts(node, answer) {
    var box = node.querySelector(".counts");
    box.textContent = "";
    [["jobs", "Jobs"], ["stages", "Stages"], ["tasks", "Tasks"]].forEach(function (pair) {
      var done = answer[pair[0] + "_completed"] || 0;
      var total = answer[pair[0] + "_total"] || 0;
      var label = document.createElement("span");
      label.textContent = pair[1];
      var bar = document.createElement("div");
      bar.className = "bar";
      var fill = document.createElement("span");
      fill.style.width = (total > 0 ? Math.min(100, 100 * done / total) : 0) + "%";
      bar.appendChild(fill);
      var figures = document.createElement("span");
      figures.className = pair[0] + "-done";
      figures.textContent = done + " of " + total + " done";
      box.appendChild(label); box.appendChild(bar); box.appendChild(figures);
    });
  }

  function svg(name, attributes) {
    var element = document.createElementNS(SVG_NS, name);
    Object.keys(attributes).forEach(function (k) { element.setAttribute(k, attributes[k]); });
    return element;
  }

  function chart(node, history) {
    var box = node.querySelector(".chart");
    while (box.firstChild) { box.removeChild(box.firstChild); }
    var points = history.filter(function (h) { return h.remaining !== null; });
    // Draw in the element's own pixels, so text is never stretched.
    var W = Math.max(320, Math.round(box.getBoundingClientRect().width) || 640);
    var H = 180, L = 56, R = 12, T = 12, B = 26;
    box.setAttribute("viewBox", "0 0 " + W + " " + H);
    box.appendChild(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#8a94a3" }));
    box.appendChild(svg("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#8a94a3" }));
    if (points.length === 0) { return; }
    var x0 = points[0].elapsed, x1 = Math.max(points[points.length - 1].elapsed, x0 + 1);
    var top = Math.max.apply(null, points.map(function (p) { return p.high !== null ? p.high : p.remaining; }).concat([1]));
    function x(v) { return L + (W - L - R) * (v - x0) / (x1 - x0); }
    function y(v) { return H - B - (H - T - B) * v / top; }
    var band = points.filter(function (p) { return p.low !== null && p.high !== null; });
    if (band.length > 1) {
      var d = band.map(function (p, i) { return (i ? "L" : "M") + x(p.elapsed).toFixed(1) + "," + y(p.high).toFixed(1); }).join(" ");
      d += " " + band.slice().reverse().map(function (p) { return "L" + x(p.elapsed).toFixed(1) + "," + y(p.low).toFixed(1); }).join(" ") + " Z";
      box.appendChild(svg("path", { d: d, fill: "#1f5fbf", "fill-opacity": "0.12", stroke: "none" }));
    }
    var line = points.map(function (p) { return x(p.elapsed).toFixed(1) + "," + y(p.remaining).toFixed(1); }).join(" ");
    box.appendChild(svg("polyline", { points: line, fill: "none", stroke: "#1f5fbf", "stroke-width": "2", "class": "remaining-line" }));
    points.forEach(function (p) {
      box.appendChild(svg("circle", { cx: x(p.elapsed).toFixed(1), cy: y(p.remaining).toFixed(1), r: "2.5", fill: "#1f5fbf" }));
    });
    var labels = [[top, T + 4], [0, H - B]];
    labels.forEach(function (pair) {
      var t = svg("text", { x: L - 4, y: pair[1], "text-anchor": "end", "font-size": "11", fill: "#5b6675" });
      t.textContent = seconds(pair[0]);
      box.appendChild(t);
    });
    var caption = svg("text", { x: W - R, y: H - 6, "text-anchor": "end", "font-size": "11", fill: "#5b6675" });
    caption.textContent = "elapsed " + seconds(x0) + " → " + seconds(points[points.length - 1].elapsed) + "; line: seconds left";
    box.appendChild(caption);
  }

  function follow(node, url, id) {
    var history = [];
    var timer = null;
    function poll() {
      getJSON(API + "/apps/" + encodeURIComponent(id) + "/remaining?url=" + encodeURIComponent(url)).then(function (answer) {
        problem(node, "");
        node.querySelector(".name").textContent = (answer.app_name ? answer.app_name + " · " : "") + answer.app_id;
        node.querySelector(".status").textContent = answer.status;
        node.setAttribute("data-status", answer.status);
        var left = answer.remaining_seconds;
        node.querySelector(".remaining").textContent = answer.status === "running"
          ? (left === null ? "estimating…" : seconds(left) + " left")
          : "finished after " + seconds(answer.elapsed_s);
        node.querySelector(".interval").textContent = "elapsed " + seconds(answer.elapsed_s) +
          (answer.low_seconds !== null && answer.high_seconds !== null
            ? "; 80 % interval " + seconds(answer.low_seconds) + " – " + seconds(answer.high_seconds) : "") +
          "; based on " + answer.basis.replace("_", " ") + " (" + answer.unit + ")";
        counts(node, answer);
        history.push({ elapsed: answer.elapsed_s, remaining: left, low: answer.low_seconds, high: answer.high_seconds });
        node.setAttribute("data-polls", String(history.length));
        chart(node, history);
        if (answer.status !== "running") { clearInterval(timer); }
      }).catch(function (error) { problem(node, error.message); });
    }
    poll();
    timer = setInterval(poll, POLL_MS);
  }

  // Without an application id, ask which applications the address lists; retry every
  // 2 s until it answers (the application may not have started yet).
  function discover(item, node) {
    getJSON(API + "/apps?url=" + encodeURIComponent(item.url)).then(function (body) {
      var apps = body.applications;
      var running = apps.filter(function (a) { return !a.completed; });
      var chosen = running.length ? running : apps.slice(0, 1);
      if (!chosen.length) {
        problem(node, "no applications at " + item.url + " yet; asking again");
        setTimeout(function () { discover(item, node); }, POLL_MS);
        return;
      }
      chosen.forEach(function (app, index) {
        var target = index === 0 ? node : card(item.url, app.id);
        target.querySelector(".name").textContent = app.id;
        target.setAttribute("data-app-id", app.id);
        problem(target, "");
        follow(target, item.url, app.id);
      });
    }).catch(function (error) {
      problem(node, error.message + " (asking again)");
      setTimeout(function () { discover(item, node); }, POLL_MS);
    });
  }

  lines(text).forEach(function (item) {
    var node = card(item.url, item.id);
    if (item.id) { follow(node, item.url, item.id); } else { discover(item, node); }
  });
})();
