"""``localeval view``: a local, read-only web app over the results store and run folders, the
way ``inspect view`` serves logs: the runs (filtered by task, model, date and protocol), each
task's leaderboard, a run's report, the sample browser and two runs compared.

It only reads: the store on a connection that cannot write, the run folders through the one
validating reader. It answers GET and HEAD only, on 127.0.0.1 only, to a Host header naming
this machine only (a web page elsewhere cannot reach it by rebinding a name), and its pages
fetch nothing from anywhere else: styles are served by the app itself, the report's own
script and styles are inline, and every text from a run is escaped.

``catalog.py`` finds the runs, ``samples.py`` filters a run's samples, ``pages.py`` writes the
HTML, ``app.py`` is the Starlette application and the server (uvicorn)."""
