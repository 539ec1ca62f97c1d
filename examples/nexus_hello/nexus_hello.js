/* The example's console page: a form that calls the plugin's own tool, as an assistant would. */
"use strict";
Nexus.page("hello/greet", {
  render(root, route, nx) {
    const { h } = nx;
    const name = h("input", { name: "name", value: route.query.name || "", placeholder: "a name" });
    const answer = h("div", { class: "answer" });
    const greet = async (event) => {
      event.preventDefault();
      try {
        const result = await nx.call("hello", { name: name.value });
        answer.replaceChildren(h("p", { class: "notice" }, result.text), h("p", { class: "muted" }, `${result.count} greetings so far`));
      } catch (error) {
        answer.replaceChildren(nx.problem(error)); // e.g. refused: the 'greet' category is not granted
      }
    };
    root.append(h("h1", {}, "Hello"), h("form", { class: "row", onsubmit: greet }, name, h("button", { type: "submit" }, "Greet")), answer);
  },
});
