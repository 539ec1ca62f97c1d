/* Markdown to DOM nodes, safely: the text only ever becomes text nodes, links only web, mail or in-page
 * addresses, and nothing loads from elsewhere (an image shows as a link). Memory content and library notes
 * are written by assistants and other people: none of it may run in the console.
 *
 * Covers what notes use: headings, paragraphs, emphasis, code (spans and fences), links and [[wikilinks]],
 * bare URLs, lists (nested, tasks), block quotes, tables and rules.
 */
"use strict";
(() => {
  const Nexus = (window.Nexus = window.Nexus || {});

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
  const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}>\s?/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children || []) node.append(child);
    return node;
  }

  function safeHref(url) {
    const text = String(url).trim();
    if (/[\u0000-\u001f\u007f]/.test(text)) return null; // the URL parser drops them: "\x01javascript:" is javascript:
    if (/^(https?:|mailto:)/i.test(text)) return text;
    if (/^[a-z][a-z0-9+.-]*:/i.test(text)) return null; // javascript:, data:, file: ...
    return text;
  }

  function link(href, children, options) {
    const safe = safeHref(href);
    if (safe === null) return el("span", { class: "unsafe-link", title: "link not followed" }, children);
    const external = /^(https?:|mailto:)/i.test(safe);
    const attrs = external ? { href: safe, rel: "noopener noreferrer nofollow", target: "_blank" } : { href: safe };
    return el("a", attrs, children);
  }

  // -- inline ----------------------------------------------------------------------

  const INLINE = new RegExp(
    [
      /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/.source, // 1,2 code
      /\[\[([^\]|\n]+)(?:\|([^\]\n]+))?\]\]/.source, // 3,4 wikilink
      /(!?)\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"\n]*")?\s*\)/.source, // 5,6,7 link or image
      /<((?:https?:\/\/|mailto:)[^>\s]+)>/.source, // 8 autolink
      /(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"*_])/.source, // 9 bare URL
      /(\*\*|__)(?=\S)([\s\S]*?\S)\10/.source, // 10,11 strong
      /(?:\*(?=[^\s*])([\s\S]*?[^\s*])\*)|(?:(?<![\w])_(?=\S)([\s\S]*?\S)_(?![\w]))/.source, // 12,13 emphasis
      /~~(?=\S)([\s\S]*?\S)~~/.source, // 14 strikethrough
      /(?: {2,}|\\)\n/.source, // a hard break
    ].join("|"),
    "g",
  );

  function inline(text, options) {
    const out = [];
    let last = 0;
    INLINE.lastIndex = 0;
    for (let m = INLINE.exec(text); m; m = INLINE.exec(text)) {
      if (m.index > last) out.push(text.slice(last, m.index).replace(/\n/g, " "));
      last = INLINE.lastIndex;
      if (m[2] !== undefined) out.push(el("code", {}, [m[2].replace(/^ (.*) $/, "$1")]));
      else if (m[3] !== undefined) out.push(wikilink(m[3].trim(), (m[4] || m[3]).trim(), options));
      else if (m[7] !== undefined) {
        const label = m[6] || m[7];
        out.push(m[5] ? link(m[7], ["🖼 ", label], options) : link(m[7], inline(label, options), options));
      } else if (m[8] !== undefined) out.push(link(m[8], [m[8]], options));
      else if (m[9] !== undefined) out.push(link(m[9], [m[9]], options));
      else if (m[11] !== undefined) out.push(el("strong", {}, inline(m[11], options)));
      else if (m[12] !== undefined || m[13] !== undefined) out.push(el("em", {}, inline(m[12] ?? m[13], options)));
      else if (m[14] !== undefined) out.push(el("del", {}, inline(m[14], options)));
      else out.push(el("br"));
      INLINE.lastIndex = last; // the recursion above moved the shared regex
    }
    if (last < text.length) out.push(text.slice(last).replace(/\n/g, " "));
    return out;
  }

  function wikilink(target, label, options) {
    const href = options.wikilink ? options.wikilink(target) : null;
    return href ? link(href, [label], options) : el("span", { class: "wikilink" }, [label]);
  }

  // -- blocks ----------------------------------------------------------------------

  function blocks(lines, options) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) {
        i++;
      } else if ((m = FENCE.exec(line))) {
        const close = new RegExp(`^ {0,3}${m[1][0]}{${m[1].length},}\\s*$`);
        const body = [];
        for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
        i++;
        const code = el("code", m[2] ? { class: `language-${m[2]}` } : {}, [body.join("\n")]);
        out.push(el("pre", {}, [code]));
      } else if ((m = HEADING.exec(line))) {
        out.push(el(`h${m[1].length}`, {}, inline(m[2], options)));
        i++;
      } else if (RULE.test(line)) {
        out.push(el("hr"));
        i++;
      } else if (QUOTE.test(line)) {
        const body = [];
        for (; i < lines.length && QUOTE.test(lines[i]); i++) body.push(lines[i].replace(QUOTE, ""));
        out.push(el("blockquote", {}, blocks(body, options)));
      } else if (ITEM.test(line)) {
        const [list, next] = listAt(lines, i, options);
        out.push(list);
        i = next;
      } else if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        const rows = [line];
        for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) rows.push(lines[i]);
        out.push(table(rows, options));
      } else {
        const para = [];
        for (; i < lines.length && lines[i].trim() && !startsBlock(lines, i); i++) para.push(lines[i]);
        if (!para.length) para.push(lines[i++]);
        out.push(el("p", {}, inline(para.join("\n").trim(), options)));
      }
    }
    return out;
  }

  function startsBlock(lines, i) {
    const line = lines[i];
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
  }

  function indent(line) {
    return line.match(/^\s*/)[0].replace(/\t/g, "    ").length;
  }

  /** The list starting at line i (items at its indentation, deeper lines belong to the item above). */
  function listAt(lines, i, options) {
    const first = ITEM.exec(lines[i]);
    const depth = indent(lines[i]);
    const ordered = /\d/.test(first[2]);
    const list = el(ordered ? "ol" : "ul", ordered && parseInt(first[2], 10) !== 1 ? { start: parseInt(first[2], 10) } : {});
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m || indent(lines[i]) !== depth || /\d/.test(m[2]) !== ordered) break;
      const body = [m[3]];
      for (i++; i < lines.length; i++) {
        const line = lines[i];
        if (!line.trim()) {
          if (i + 1 < lines.length && indent(lines[i + 1]) > depth && lines[i + 1].trim()) {
            body.push("");
            continue;
          }
          break;
        }
        if (indent(line) <= depth && (ITEM.test(line) || startsBlock(lines, i))) break;
        body.push(indent(line) > depth ? line.slice(Math.min(indent(line), depth + 2)) : line.trim());
      }
      list.append(item(body, options));
      while (i < lines.length && !lines[i].trim() && i + 1 < lines.length && ITEM.test(lines[i + 1]) && indent(lines[i + 1]) === depth) i++;
    }
    return [list, i];
  }

  function item(body, options) {
    const task = /^\[([ xX])\]\s+/.exec(body[0]);
    if (task) body[0] = body[0].slice(task[0].length);
    const children = blocks(body, options);
    // A tight item's single paragraph is shown inline.
    const content = children.length && children[0].tagName === "P" ? [...children[0].childNodes, ...children.slice(1)] : children;
    const li = el("li", {}, content);
    if (task) {
      const box = el("input", { type: "checkbox", disabled: "" });
      box.checked = task[1] !== " ";
      li.prepend(box, " ");
      li.className = "task";
    }
    return li;
  }

  function cells(row) {
    return row.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  }

  function table(rows, options) {
    const head = el("thead", {}, [el("tr", {}, cells(rows[0]).map((c) => el("th", {}, inline(c, options))))]);
    const body = el(
      "tbody",
      {},
      rows.slice(1).map((row) => el("tr", {}, cells(row).map((c) => el("td", {}, inline(c, options))))),
    );
    return el("div", { class: "table-wrap" }, [el("table", {}, [head, body])]);
  }

  /** A DocumentFragment for ``text``; ``options.wikilink(name)`` gives the address of a [[name]] (or null). */
  Nexus.markdown = (text, options = {}) => {
    const fragment = document.createDocumentFragment();
    fragment.append(...blocks(String(text ?? "").replace(/\r\n?/g, "\n").split("\n"), options));
    return fragment;
  };
})();
