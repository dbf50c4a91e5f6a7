"""The live view in the browser: the groups table, a group's page, the dead letters, and
people's verdicts on the judge's (``groundwatch view``, and ``/ui`` on the analytics service
and on ``groundwatch run``'s continuous app).

Server-side pages (Jinja2) over the same rows ``groundwatch groups`` and ``show`` print
(:func:`groundwatch.report.groups.group_results`), with htmx (vendored, nothing loads from a
CDN) for the table's polling refresh and the verdict buttons. Reads need the read token where
one is set (as a bearer header, or a cookie the login form sets: a browser's navigation cannot
send a header); a person's verdict always needs the write token as a bearer header, which the
page's script sends and a cookie never does, so another site cannot post one.
"""

from groundwatch.runtime.view.pages import Reads, ViewAuth, add_view

__all__ = ["Reads", "ViewAuth", "add_view"]
