/* Activity: what every client did (the audit log, live), and the plugins with what they are granted. */
"use strict";
Nexus.page("core/activity", {
  async render(root, route, nx) {
    const { h } = nx;
    const q = route.query;
    const filters = {
      client: h("input", { name: "client", placeholder: "client", value: q.client || "", size: 12 }),
      plugin: h("input", { name: "plugin", placeholder: "plugin", value: q.plugin || "", size: 10 }),
      tool: h("input", { name: "tool", placeholder: "tool contains", value: q.tool || "", size: 14 }),
      outcome: h(
        "select",
        { name: "outcome" },
        [["", "any outcome"], ["problem", "problems only"], ["ok"], ["error"], ["denied"], ["cancelled"]].map(([v, l]) =>
          nx.option(v, l, q.outcome),
        ),
      ),
      own: h("input", { type: "checkbox", name: "own", checked: q.own === "1" }),
    };
    const value = (input) => (input.type === "checkbox" ? (input.checked ? "1" : "") : input.value.trim());
    const form = h(
      "form",
      {
        class: "filters",
        onsubmit(event) {
          event.preventDefault();
          const params = new URLSearchParams(Object.entries(filters).map(([k, input]) => [k, value(input)]));
          nx.go(`core/activity?${params}`);
        },
      },
      Object.entries(filters).map(([k, input]) =>
        k === "own" ? h("label", { title: "Reads the console makes to draw its pages" }, input, " the console's own reads") : input,
      ),
      h("button", { type: "submit" }, "Filter"),
    );
    const live = h("input", { type: "checkbox", checked: true, id: "live" });
    const status = h("span", { class: "muted" });
    const rows = h("tbody");
    const table = h(
      "table",
      { class: "activity" },
      h("thead", {}, h("tr", {}, ["time", "client", "plugin", "tool", "outcome", "ms", "detail"].map((c) => h("th", {}, c)))),
      rows,
    );
    const plugins = h("div", { class: "plugins" }, h("p", { class: "muted" }, "Loading plugins…"));
    root.append(
      h("h1", {}, "Activity"),
      form,
      h("p", {}, h("label", {}, live, " live"), " ", status),
      h("div", { class: "table-wrap" }, table),
      h("h2", {}, "Plugins"),
      plugins,
    );

    const wanted = Object.fromEntries(Object.entries(filters).map(([k, input]) => [k, value(input)]));
    const row = (e) =>
      h(
        "tr",
        { class: `outcome-${e.outcome}` },
        h("td", {}, nx.when(e.time)),
        h("td", {}, e.client),
        h("td", {}, e.plugin),
        h("td", {}, e.kind && e.kind !== "tool" ? `${e.kind} ` : "", h("code", {}, e.tool)),
        h("td", {}, h("span", { class: `badge ${e.outcome}` }, e.outcome)),
        h("td", { class: "num" }, nx.number(e.duration_ms, 1)),
        h("td", { class: "detail" }, e.error || ""),
      );
    let offset = null;
    const load = async () => {
      const found = await nx.get("activity", { ...wanted, limit: 300, since: offset ?? "" });
      const fresh = found.entries.map(row);
      if (offset === null) rows.replaceChildren(...fresh);
      else rows.prepend(...fresh);
      while (rows.children.length > 1000) rows.lastChild.remove();
      offset = found.offset;
      status.textContent = found.audit ? `from ${found.audit}` : "the audit log is off ([server.audit] enabled = false)";
    };
    try {
      await load();
    } catch (error) {
      root.append(nx.problem(error));
      return;
    }
    const timer = setInterval(() => {
      if (!root.isConnected) return clearInterval(timer);
      if (live.checked) load().catch((error) => (status.textContent = error.message));
    }, 2000);

    try {
      const report = await nx.get("plugins");
      plugins.replaceChildren(pluginTable(report.plugins, nx));
    } catch (error) {
      plugins.replaceChildren(nx.problem(error));
    }
  },
});

function pluginTable(list, nx) {
  const { h } = nx;
  const categories = (names, all, cls) =>
    names.length ? names.map((c) => h("span", { class: `chip ${cls}`, title: all[c] || "" }, c)) : "—";
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "plugins" },
      h(
        "thead",
        {},
        h("tr", {}, ["plugin", "version", "status", "granted", "not granted", "tools", "roots", "source"].map((c) => h("th", {}, c))),
      ),
      h(
        "tbody",
        {},
        list.map((p) =>
          h(
            "tr",
            { class: p.status === "ok" ? "" : "failed" },
            h("td", {}, h("strong", {}, p.name), p.runtime.map((line) => h("div", { class: "muted" }, line))),
            h("td", {}, p.version || "—"),
            h("td", {}, p.status),
            h("td", {}, categories(p.granted, p.categories, "granted")),
            h("td", {}, categories(p.refused, p.categories, "refused")),
            h(
              "td",
              {},
              p.allow_tools.length ? h("div", {}, "only: ", p.allow_tools.join(", ")) : "",
              p.deny_tools.length ? h("div", {}, "denied: ", p.deny_tools.join(", ")) : "",
            ),
            h("td", {}, Array.isArray(p.roots) ? p.roots.map((r) => h("div", {}, h("code", {}, r))) : p.roots),
            h("td", { class: "muted" }, p.source),
          ),
        ),
      ),
    ),
  );
}
