/* Libraries: each library's entities, an entity's table of contents, its sections rendered, its relations
 * and backlinks, and the library's manual (meta.md). Sections can be edited only when the manual plugin's
 * write is granted (replace_entity_section).
 */
"use strict";
(() => {
  const PAGE = 200; // entity names listed at a time
  const base = "manual/libraries";
  const at = (...parts) => [base, ...parts.map(encodeURIComponent)].join("/");

  Nexus.page("manual/libraries", {
    async render(root, { path, query }, nx) {
      const libraries = nx.data.libraries || [];
      const [library, kind, name] = path;
      if (!library) return listLibraries(root, libraries, nx);
      if (kind === "meta") return manual(root, library, nx);
      if (kind === "e" && name) return entity(root, library, name, query, nx);
      return entities(root, library, query, nx);
    },
  });

  function listLibraries(root, libraries, nx) {
    const { h } = nx;
    if (libraries.length === 1) return nx.go(at(libraries[0]));
    root.append(
      h("h1", {}, "Libraries"),
      libraries.length
        ? h("ul", { class: "results" }, libraries.map((lib) => h("li", {}, h("a", { href: "#/" + at(lib) }, lib), " · ", h("a", { href: "#/" + at(lib, "meta") }, "manual"))))
        : h("p", { class: "muted" }, 'No libraries configured: add [plugins.manual.libraries] name = "folder" to nexus.toml.'),
    );
  }

  function crumbs(nx, library, ...rest) {
    const { h } = nx;
    return h("div", { class: "row muted" }, h("a", { href: "#/" + base }, "Libraries"), " / ", h("a", { href: "#/" + at(library) }, library), rest.map((r) => [" / ", r]));
  }

  async function entities(root, library, query, nx) {
    const { h } = nx;
    const glob = h("input", { type: "search", name: "glob", value: query.glob || "", placeholder: "names matching, e.g. *deploy*" });
    root.append(
      crumbs(nx),
      h("h1", {}, library),
      h("p", {}, h("a", { href: "#/" + at(library, "meta") }, "The library's manual (meta.md)")),
      h(
        "form",
        { class: "filters", onsubmit: (e) => (e.preventDefault(), nx.go(`${at(library)}?${new URLSearchParams({ glob: glob.value.trim() })}`)) },
        glob,
        h("button", { type: "submit" }, "Filter"),
      ),
    );
    const list = h("div");
    root.append(list);
    try {
      const found = await nx.call("list_entities", { library_name: library, entity_glob: query.glob || "*" });
      const start = Math.max(0, parseInt(query.from || "0", 10) || 0);
      const shown = found.entities.slice(start, start + PAGE);
      const more = (from) => `#/${at(library)}?${new URLSearchParams({ glob: query.glob || "", from })}`;
      list.append(
        h("p", { class: "muted" }, `${found.count} entities`),
        h("ul", { class: "entities" }, shown.map((name) => h("li", {}, h("a", { href: "#/" + at(library, "e", name) }, name)))),
        h("div", { class: "pager" }, start > 0 ? h("a", { href: more(Math.max(0, start - PAGE)) }, "← previous") : "", start + PAGE < found.count ? h("a", { href: more(start + PAGE) }, "next →") : ""),
      );
    } catch (error) {
      list.append(nx.problem(error));
    }
  }

  async function manual(root, library, nx) {
    const { h } = nx;
    root.append(crumbs(nx, library, "manual"), h("h1", {}, `${library}: manual`));
    try {
      const out = await nx.call("read_manual", { library_name: library });
      root.append(
        out.exists
          ? h("div", { class: "columns" }, h("div", { class: "panel markdown" }, nx.md(out.content, { wikilink: (t) => "#/" + at(library, "e", t) })), h("div", { class: "panel" }, h("h2", {}, "Contents"), toc(out.toc.filter((t) => t.level > 0), nx)))
          : h("p", { class: "muted" }, "This library has no manual yet (meta.md)."),
      );
    } catch (error) {
      root.append(nx.problem(error));
    }
  }

  function toc(items, nx, href) {
    const { h } = nx;
    return h("ul", { class: "toc" }, items.map((t) => h("li", { class: `level-${t.level}` }, href ? h("a", { href: href(t.heading) }, t.heading) : t.heading)));
  }

  /** fnmatch matches `*`, `?` and `[` specially: a heading is matched as written. */
  const literal = (text) => text.replace(/[[*?]/g, (c) => `[${c}]`);

  async function entity(root, library, name, query, nx) {
    const { h } = nx;
    const wikilink = (target) => "#/" + at(library, "e", target);
    const sectionHref = (heading) => `#/${at(library, "e", name)}?${new URLSearchParams({ section: heading })}`;
    root.append(crumbs(nx, library, name), h("h1", {}, name));
    const status = h("div");
    const main = h("div", { class: "panel markdown entity-body" });
    const side = h("div");
    root.append(status, h("div", { class: "columns" }, h("div", {}, main), side));
    const [tocOut, relationsOut] = await Promise.allSettled([
      nx.call("get_entities_toc", { library_name: library, entity_names: [name] }),
      nx.call("find_relations", { library_name: library, to_entity: name }),
    ]);
    const headings = tocOut.status === "fulfilled" ? tocOut.value.entities[0].toc.filter((t) => t.level > 0) : [];
    try {
      if (query.section) {
        const out = await nx.call("read_entities_sections", { library_name: library, entity_names: [name], section_globs: [literal(query.section)] });
        const sections = out.entities[0].sections;
        main.replaceChildren(h("p", { class: "muted" }, h("a", { href: "#/" + at(library, "e", name) }, "← the whole entity")));
        for (const s of sections) {
          main.append(h("section", { class: "section", "data-heading": s.heading }, nx.md(s.content, { wikilink })));
          main.append(editSection(library, name, s, nx, status));
        }
        if (!sections.length) main.append(h("p", { class: "muted" }, "No such section."));
      } else {
        const out = await nx.call("read_entities", { library_name: library, entity_names: [name] });
        const { front, body } = splitFront(out.entities[0].content);
        main.replaceChildren(nx.md(body, { wikilink }));
        if (front) side.append(h("details", { class: "panel" }, h("summary", {}, "Front matter"), h("pre", {}, front)));
        const outgoing = relationsIn(front);
        side.prepend(
          h(
            "div",
            { class: "panel" },
            h("h2", {}, "Relations"),
            outgoing.length ? h("ul", { class: "relations out" }, outgoing.map((r) => h("li", {}, "→ ", h("span", { class: "chip" }, r.type), " ", h("a", { href: wikilink(r.to) }, r.to)))) : h("p", { class: "muted" }, "none"),
          ),
        );
      }
    } catch (error) {
      main.replaceChildren(nx.problem(error));
    }
    side.prepend(
      h("div", { class: "panel" }, h("h2", {}, "Contents"), tocOut.status === "fulfilled" ? toc(headings, nx, sectionHref) : nx.problem(tocOut.reason)),
      h(
        "div",
        { class: "panel" },
        h("h2", {}, "Backlinks"),
        relationsOut.status === "rejected"
          ? nx.problem(relationsOut.reason)
          : relationsOut.value.relations.length
            ? h("ul", { class: "relations in" }, relationsOut.value.relations.map((r) => h("li", {}, "← ", h("a", { href: wikilink(r.from) }, r.from), " ", h("span", { class: "chip" }, r.type))))
            : h("p", { class: "muted" }, "none"),
      ),
    );
  }

  function editSection(library, name, section, nx, status) {
    const { h } = nx;
    if (!nx.granted("replace_entity_section")) return "";
    const [first, ...rest] = section.content.split("\n");
    const body = h("textarea", { name: "body" }, rest.join("\n").replace(/^\n+/, ""));
    const form = h(
      "form",
      {
        async onsubmit(event) {
          event.preventDefault();
          try {
            await nx.call("replace_entity_section", { library_name: library, entity_name: name, old_heading: section.heading, new_heading: "", new_body_content: body.value });
            status.replaceChildren(h("div", { class: "notice" }, "Saved."));
            window.dispatchEvent(new HashChangeEvent("hashchange"));
          } catch (error) {
            status.replaceChildren(nx.problem(error));
          }
        },
      },
      h("label", { class: "field" }, `Body of “${first.replace(/^#+\s*/, "")}”`, body),
      h("button", { type: "submit", class: "primary" }, "Save section"),
    );
    return h("details", { class: "edit" }, h("summary", {}, "Edit this section"), form);
  }

  function splitFront(text) {
    const m = /^---\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/.exec(text);
    return m ? { front: m[1], body: text.slice(m[0].length) } : { front: "", body: text };
  }

  /** The `relations:` list of a front matter, as the plugin writes it (a block list of {type, to}). */
  function relationsIn(front) {
    const out = [];
    const block = /^relations:[ \t]*\n((?:[ \t]*-.*\n?|[ \t]+.*\n?)*)/m.exec(front + "\n");
    if (!block) return out;
    for (const item of block[1].split(/^[ \t]*-[ \t]*/m).slice(1)) {
      const value = (key) => {
        const m = new RegExp(`(?:^|\\n|\\{|,)\\s*${key}:\\s*("([^"]*)"|'([^']*)'|[^,}\\n]+)`).exec(item);
        return m ? (m[2] ?? m[3] ?? m[1]).trim() : null;
      };
      const to = value("to");
      if (to) out.push({ type: value("type") || "", to });
    }
    return out;
  }
})();
