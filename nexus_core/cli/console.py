"""``nexus console``: open the console of the shared server (started if needed) in the browser."""

from __future__ import annotations

import webbrowser
from typing import Any

import click

from nexus_core.cli.options import flags
from nexus_core.cli.server import ensure_running
from nexus_core.serve import rendezvous
from nexus_core.serve.options import SHARED_SERVER_FLAGS, ServeOptions


@click.command()
@flags(*SHARED_SERVER_FLAGS)
@click.option("--no-open", is_flag=True, help="Only print the login link; do not open a browser.")
def console(no_open: bool, **values: Any) -> None:
    """Open the console: a local web page to see, search, fix and forget what Nexus knows and did."""
    key = ensure_running(ServeOptions.of(values))
    answer = rendezvous.ask(key, "console", timeout=60) or {}
    if answer.get("nexus") != "console":
        raise click.ClickException(f"the shared server did not open the console: {answer.get('reason', answer)}")
    url = answer["url"]
    click.echo(f"Nexus console: {url}")
    click.echo("The link logs one browser in, once, within 5 minutes; run `nexus console` again for another.", err=True)
    if not no_open and not webbrowser.open(url):
        click.echo("No browser could be opened here: open the link yourself.", err=True)
