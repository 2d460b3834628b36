# A course on one machine (docs/deploying.md): JupyterHub spawns each student's Jupyter server as a local process,
# with the explorer as a JupyterLab launcher tile (/user/<name>/transformer-explorer/), and runs the class's teacher
# page as the hub service /services/transformer-explorer/, open to the hub group "instructors".
#
#   TRANSFORMER_EXPLORER_INSTRUCTORS=ada,alan \
#   jupyterhub -f deploy/jupyterhub/jupyterhub_config.py --ip 127.0.0.1 --port 8000 \
#       --JupyterHub.authenticator_class=dummy
#
# The dummy authenticator lets anyone in with any password: for a trial on loopback only. A real course sets its
# university's authenticator (oauthenticator, ldapauthenticator, or PAM with system users and the "localprocess"
# spawner). The hub keeps its database and cookie secret in the folder it starts in.
#
# Environment (all optional): TRANSFORMER_EXPLORER_INSTRUCTORS (comma-separated hub user names),
# TRANSFORMER_EXPLORER_CLASS_DB (keep answers in this SQLite file), TRANSFORMER_EXPLORER_SERVICE_PORT (10101),
# TRANSFORMER_EXPLORER_HUB_API_PORT (8081) and TRANSFORMER_EXPLORER_PROXY_API_PORT (8001): loopback ports of the
# service, the hub's API and the proxy's API.
import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub defines it when it reads this file)

SERVICE = "transformer-explorer"
SERVICE_PORT = int(os.environ.get("TRANSFORMER_EXPLORER_SERVICE_PORT", "10101"))
SERVICE_URL = f"http://127.0.0.1:{SERVICE_PORT}"
INSTRUCTORS = [name.strip() for name in os.environ.get("TRANSFORMER_EXPLORER_INSTRUCTORS", "").split(",")
               if name.strip()]
QUIET = {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}
# Students share the machine's cores: a torch thread that spins while it waits (OpenMP's default) takes the core a
# classmate's run or page needs.
SHARED_CORES = {"OMP_WAIT_POLICY": "PASSIVE"}

# Each student's server: this Python's jupyterhub-singleuser (a JupyterLab with the explorer's tile), in a home of
# its own beside the hub's database; as root (CI), Jupyter must be told it may run so.
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = os.path.join(os.getcwd(), "homes", "{username}")
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root"] if os.getuid() == 0 else []
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {**QUIET, **SHARED_CORES,
                         "TRANSFORMER_EXPLORER_SERVICE_URL": f"{SERVICE_URL}/services/{SERVICE}/"}

# The class's teacher page, started and stopped with the hub.
c.JupyterHub.services = [{
    "name": SERVICE, "url": SERVICE_URL, "oauth_no_confirm": True,
    "command": [sys.executable, "-m", "explorer.hub.service"],
    "environment": {**QUIET, **{k: v for k, v in os.environ.items() if k == "TRANSFORMER_EXPLORER_CLASS_DB"}},
}]
c.JupyterHub.load_groups = {"instructors": {"users": INSTRUCTORS}}
c.JupyterHub.load_roles = [
    {"name": "explorer-instructors", "groups": ["instructors"],
     "scopes": [f"access:services!service={SERVICE}"]},
]

c.JupyterHub.hub_port = int(os.environ.get("TRANSFORMER_EXPLORER_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('TRANSFORMER_EXPLORER_PROXY_API_PORT', '8001')}"
# configurable-http-proxy (npm) from the PATH, else the copy `make test` installs beside the checkout's .venv
_local_proxy = Path(__file__).resolve().parents[2] / ".venv" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
if shutil.which("configurable-http-proxy") is None and _local_proxy.exists():
    c.ConfigurableHTTPProxy.command = [str(_local_proxy)]
