"""``nexus console``: open the console of the shared server (started if needed) in the browser."""

from __future__ import annotations

import webbrowser

import click

from nexus_core import shared
from nexus_core.server_cli import _shape_options, ensure_running


@click.command()
@_shape_options
@click.option("--no-open", is_flag=True, help="Only print the login link; do not open a browser.")
def console(
    config_path: str | None, overrides: tuple[str, ...], libraries: str | None, name: str | None, no_open: bool
) -> None:
    """Open the console: a local web page to see, search, fix and forget what Nexus knows and did."""
    key = ensure_running(config_path, overrides, libraries, name)
    answer = shared.ask(key, "console", timeout=60) or {}
    if answer.get("nexus") != "console":
        raise click.ClickException(f"the shared server did not open the console: {answer.get('reason', answer)}")
    url = answer["url"]
    click.echo(f"Nexus console: {url}")
    click.echo("The link logs one browser in, once, within 5 minutes; run `nexus console` again for another.", err=True)
    if not no_open and not webbrowser.open(url):
        click.echo("No browser could be opened here: open the link yourself.", err=True)
