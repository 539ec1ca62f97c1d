/* The Nexus console's core, used by every page: in the console, and in MCP Apps views inside a client.
 *
 * A page is registered with Nexus.page("<plugin>/<id>", {render(root, route, nx), views: {name(root, result, nx)}}).
 * It reaches its plugin only through nx.call(tool, args): in the console a POST to /console/api/call (the gate,
 * as the client "console"); in an MCP Apps view a tools/call sent to the client that shows it.
 * Everything is built with DOM nodes and text nodes, never from HTML strings.
 */
"use strict";
(() => {
  const Nexus = (window.Nexus = window.Nexus || {});
  Nexus.pages = {};
  Nexus.page = (key, definition) => {
    Nexus.pages[key] = definition;
  };

  // -- DOM -------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value == null || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "href") el.setAttribute("href", safeHref(value));
      else if (key === "class") el.className = value;
      else if (key === "value") el.value = value;
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    return append(el, children);
  }

  function append(el, children) {
    for (const child of [children].flat(Infinity)) {
      if (child == null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  /** Only web, mail and in-page addresses: never javascript:, data: or other schemes. */
  function safeHref(url) {
    const text = String(url).trim();
    if (/[\u0000-\u001f\u007f]/.test(text)) return "#"; // the URL parser drops them: "\x01javascript:" is javascript:
    if (/^(https?:|mailto:)/i.test(text)) return text;
    if (/^[a-z][a-z0-9+.-]*:/i.test(text)) return "#";
    return text;
  }

  function number(value, digits = 2) {
    return typeof value === "number" ? value.toFixed(digits) : "";
  }

  function when(stamp) {
    if (!stamp) return "";
    const date = new Date(stamp);
    return isNaN(date) ? String(stamp) : date.toLocaleString();
  }

  function option(value, label, selected) {
    return h("option", { value, selected: String(value) === String(selected ?? "") }, label ?? value);
  }

  function chips(items, cls = "chip") {
    return (items || []).map((item) => h("span", { class: cls }, item));
  }

  /** A button that asks once more before it acts (no native dialog: sandboxed views may not show one). */
  function confirmButton(label, confirmLabel, action, cls = "danger") {
    let armed = false;
    const button = h("button", { type: "button", class: cls }, label);
    button.addEventListener("click", async () => {
      if (!armed) {
        armed = true;
        button.textContent = confirmLabel;
        setTimeout(() => {
          armed = false;
          button.textContent = label;
        }, 5000);
        return;
      }
      armed = false;
      button.textContent = label;
      await action();
    });
    return button;
  }

  // -- calling tools ---------------------------------------------------------------

  class CallError extends Error {
    constructor(message, { refused = false, login = false } = {}) {
      super(message);
      this.refused = refused;
      this.login = login;
    }
  }

  function fromOutcome(outcome) {
    if (outcome.ok) return outcome.result;
    throw new CallError(outcome.error, { refused: !!outcome.refused });
  }

  class ConsoleTransport {
    constructor(base, csrf) {
      this.base = base;
      this.csrf = csrf;
    }
    async request(path, options) {
      const response = await fetch(this.base + path, { credentials: "same-origin", ...options });
      const body = await response.json().catch(() => ({ error: response.statusText }));
      if (!response.ok) throw new CallError(body.error || response.statusText, { login: response.status === 401 });
      return body;
    }
    get(path, params) {
      const query = new URLSearchParams(Object.entries(params || {}).filter(([, v]) => v !== "" && v != null));
      return this.request(`/api/${path}${query.toString() ? "?" + query : ""}`, {});
    }
    post(path, body) {
      const headers = { "content-type": "application/json", "x-nexus-csrf": this.csrf };
      return this.request(`/api/${path}`, { method: "POST", headers, body: JSON.stringify(body) });
    }
    async call(tool, args) {
      return fromOutcome(await this.post("call", { tool, arguments: args || {} }));
    }
    async calls(list) {
      return (await this.post("call", { calls: list })).results;
    }
  }

  /** The MCP Apps side of a view: JSON-RPC over postMessage with the client that renders it. */
  class AppTransport {
    constructor() {
      this.next = 1;
      this.pending = new Map();
      this.handlers = {};
      window.addEventListener("message", (event) => this.receive(event));
    }
    receive(event) {
      if (event.source !== window.parent) return;
      const message = event.data;
      if (!message || message.jsonrpc !== "2.0") return;
      if (message.method === undefined) {
        const waiting = this.pending.get(message.id);
        if (!waiting) return;
        this.pending.delete(message.id);
        if (message.error) waiting.reject(new CallError(message.error.message || "error"));
        else waiting.resolve(message.result);
        return;
      }
      const handler = this.handlers[message.method];
      const result = handler ? handler(message.params || {}) : undefined;
      if (message.id === undefined) return;
      const answer = handler
        ? { jsonrpc: "2.0", id: message.id, result: result || {} }
        : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `unknown method ${message.method}` } };
      window.parent.postMessage(answer, "*");
    }
    request(method, params) {
      const id = this.next++;
      return new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
      });
    }
    notify(method, params) {
      window.parent.postMessage({ jsonrpc: "2.0", method, params }, "*");
    }
    async call(tool, args) {
      return toolResult(await this.request("tools/call", { name: tool, arguments: args || {} }));
    }
    calls(list) {
      return Promise.all(
        list.map((c) =>
          this.call(c.tool, c.arguments).then(
            (result) => ({ ok: true, result }),
            (error) => ({ ok: false, error: error.message, refused: error.refused }),
          ),
        ),
      );
    }
    get() {
      return Promise.reject(new CallError("only the console serves this"));
    }
  }

  /** A CallToolResult as pages see it: its structured content, or a CallError. */
  function toolResult(result) {
    const text = (result.content || []).map((block) => block.text || "").join("\n");
    if (result.isError) throw new CallError(text, { refused: text.startsWith("permission denied") });
    return result.structuredContent ?? { text };
  }

  function problem(error) {
    const refused = error && error.refused;
    const text = error && error.message ? error.message : String(error);
    return h("div", { class: refused ? "problem refused" : "problem", role: "alert" }, refused ? "Refused: " : "", text);
  }

  // -- what a page is handed -------------------------------------------------------

  function makeNx(transport, page, mode, tools) {
    return {
      mode,
      data: page.data || {},
      h,
      append,
      md: (text, options) => Nexus.markdown(text, options),
      graph: (container, options) => Nexus.graph(container, options),
      number,
      when,
      option,
      chips,
      confirmButton,
      problem,
      CallError,
      call: (tool, args) => transport.call(tool, args),
      calls: (list) => transport.calls(list),
      get: (path, params) => transport.get(path, params),
      /** Whether this session may call the tool (in a view: assumed; the client's server still decides). */
      granted: (tool) => mode !== "console" || (tools[tool] !== undefined && !tools[tool].refusal),
      refusal: (tool) => (mode !== "console" ? null : tools[tool] ? tools[tool].refusal : `no tool '${tool}'`),
      /** A link to a console route; in a view, `open` runs instead (there is no console to go to). */
      link(text, route, open) {
        if (mode === "console" || !open) return h("a", { href: "#/" + route }, text);
        return h("a", { href: "#", onclick: (event) => (event.preventDefault(), open()) }, text);
      },
      go(route) {
        location.hash = "#/" + route;
      },
      loading: (root, text = "Loading…") => root.replaceChildren(h("p", { class: "muted" }, text)),
    };
  }

  // -- the console -----------------------------------------------------------------

  Nexus.bootConsole = async (base) => {
    const csrf = document.querySelector('meta[name="nexus-csrf"]').content;
    const transport = new ConsoleTransport(base, csrf);
    const main = document.getElementById("main");
    let info;
    try {
      info = await transport.get("session");
    } catch (error) {
      main.replaceChildren(problem(error));
      return;
    }
    const pages = info.pages.filter((p) => Nexus.pages[p.key]);
    const nav = document.getElementById("nav");
    nav.replaceChildren(...pages.map((p) => h("a", { href: "#/" + p.key, "data-key": p.key }, p.title)));
    document.getElementById("who").textContent = info.server;

    async function route() {
      const [pathPart, queryPart] = location.hash.replace(/^#\/?/, "").split("?");
      const parts = pathPart.split("/").filter(Boolean).map(decodeURIComponent);
      const page = pages.find((p) => p.key === parts.slice(0, 2).join("/"));
      if (!page) {
        if (pages.length) location.replace("#/" + pages[0].key);
        return;
      }
      for (const a of nav.children) a.classList.toggle("active", a.dataset.key === page.key);
      document.title = `${page.title} · Nexus console`;
      const root = h("div", { class: "page", "data-page": page.key });
      main.replaceChildren(root);
      const query = Object.fromEntries(new URLSearchParams(queryPart || ""));
      try {
        await Nexus.pages[page.key].render(root, { path: parts.slice(2), query }, makeNx(transport, page, "console", info.tools));
      } catch (error) {
        root.append(problem(error));
      }
    }
    window.addEventListener("hashchange", route);
    await route();
  };

  // -- an MCP Apps view ------------------------------------------------------------

  Nexus.bootView = async (key, view, data) => {
    const transport = new AppTransport();
    const root = document.getElementById("main");
    const nx = makeNx(transport, { data }, "app", {});
    const render = Nexus.pages[key].views[view];
    transport.handlers["ui/notifications/tool-input"] = () => nx.loading(root);
    transport.handlers["ui/notifications/tool-result"] = (result) => {
      try {
        Promise.resolve(render(root, toolResult(result), nx)).catch((error) => root.replaceChildren(problem(error)));
      } catch (error) {
        root.replaceChildren(problem(error));
      }
    };
    transport.handlers["ui/notifications/host-context-changed"] = (context) => theme(context);
    transport.handlers["ui/resource-teardown"] = () => ({});
    const init = await transport.request("ui/initialize", {
      protocolVersion: "2026-01-26",
      appInfo: { name: "nexus-console", version: "1" },
      appCapabilities: {},
    });
    theme((init && init.hostContext) || {});
    transport.notify("ui/notifications/initialized", {});
    new ResizeObserver(() =>
      transport.notify("ui/notifications/size-changed", {
        width: document.documentElement.scrollWidth,
        height: document.documentElement.scrollHeight,
      }),
    ).observe(document.body);
  };

  function theme(context) {
    if (context.theme) document.documentElement.dataset.theme = context.theme;
  }
})();
