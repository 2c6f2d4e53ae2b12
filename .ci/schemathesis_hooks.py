"""Schemathesis hooks for .ci/fuzz: keep every generated request bounded in time.

Watches stream until their timeout (minutes by default) and a resourceVersion from the future
is answered 504 after a 3 s wait, as kube-apiserver does (API-CONVENTIONS B.1): neither is a
server error, so the requests that would ask for them are turned into plain reads.
"""

import schemathesis


@schemathesis.hook
def before_call(context, case, kwargs):
    query = case.query
    if not isinstance(query, dict):
        return
    for key in ("watch", "allowWatchBookmarks", "sendInitialEvents"):
        query.pop(key, None)
    if "timeoutSeconds" in query:
        query["timeoutSeconds"] = 1
    rv = query.get("resourceVersion")
    if isinstance(rv, str) and rv.isdigit():
        query["resourceVersion"] = "0"
