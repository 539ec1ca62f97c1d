/* Start the console once every page's script has registered its page. */
"use strict";
window.Nexus.bootConsole("/console");
