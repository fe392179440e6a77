#!/usr/bin/env bash
# cli-reference.sh [--one-container] TASK_DIR [RUN_ID]
# cli-reference.sh --harbor TASK_DIR oracle|nop [RUN_ID]
#
# One trial of a flightdeck-native task done the way CLI-based runners do
# it: every step is a separate docker CLI process. make bench measures it
# beside flightdeck's own trial of the same task.
#
# Default, the same trial as flightdeck's and as the bench's floor: the
# agent in its container, then grading in a fresh container from the
# pristine image. The agent runs `true` (a nop agent with a container):
#   docker build   the task's environment (a cache hit after the first time)
#   the agent's container:  docker run -d (kept alive with sleep), docker cp
#     the instruction in, docker exec the agent, docker cp the work dir out,
#     docker rm -f
#   the grader's container: docker run -d, docker cp the work dir in,
#     docker cp tests/ in, docker exec the grader with a fresh reward dir,
#     docker cp the reward dir out, docker rm -f
#
# --one-container, Harbor's shape (grading in the agent's container) with
# a nop agent that runs nothing: docker build, run -d, cp tests/ in, exec
# the grader, cp the reward out, rm -f.
#
# It prints the reward. Everything it creates carries
# flightdeck.managed=true and flightdeck.run=RUN_ID, so a reap by run id (or
# `flightdeck gc`) removes what an interrupted trial leaves. The image tag
# flightdeck-cliref/<task>:<RUN_ID> is kept for the next trial of the same
# run (a cached build) and is the caller's to remove.
#
# --harbor re-enacts one trial of a Harbor-format task (task.toml,
# environment/, solution/solve.sh, tests/test.sh) the way Harbor's local
# Docker environment runs it in its default shared mode, with plain docker
# CLI commands instead of docker compose; see harbor_trial below for the
# steps; a multi-step task ([[steps]], steps/NAME/) has its steps run in
# order in the one container (see harbor_steps). AGENT is oracle (runs
# solution/solve.sh) or nop (runs nothing). It prints the reward:
# reward.json's "reward" value, else reward.txt's content, else `none` (a
# multi-step task's per multi_step_reward_strategy over its steps; also
# printed, with exit status 1, when the trial fails before
# a reward could be read: a refused task, a failed build, a failed
# healthcheck, a verifier timeout). Variables:
#   CLIREF_IMAGE_MAP   base-image map, "from=to ..." (for example
#                      "python:3.12-slim=flightdeck/base:bookworm"): FROM lines
#                      (and the ARG defaults FROM uses, and COPY --from) are
#                      rewritten in a temporary copy of environment/, and a
#                      mapped [environment].docker_image is run as its target.
#                      Nothing is pulled and no image is re-tagged.
#   CLIREF_KEEP_IMAGE=1  keep the built image flightdeck-cliref/<task>:<RUN_ID>
#                      (labelled with the run) for another trial of the same
#                      run; by default it is removed at the end.
#   CLIREF_LOGS=DIR    copy the trial's /logs (agent/, verifier/, artifacts/)
#                      and build.log to DIR; a multi-step task's steps/NAME/
#                      (its verifier/, rewards.json, setup.txt) too.
#   CLIREF_VERBOSE=1   print the steps' exit codes and the rewards (each
#                      step's of a multi-step task) on stderr.
set -euo pipefail

# The task.toml reader of --harbor: prints shell assignments (shlex-quoted).
# Fields and defaults are Harbor's (src/harbor/models/task/config.py);
# ${VAR} and ${VAR:-default} env values are resolved from the host
# (src/harbor/utils/env.py: resolve_env_vars); what Harbor's local Docker
# environment cannot run the shared way is refused.
harbor_toml_py='
import json, os, re, shlex, sys, tomllib
task = sys.argv[1]
out = []
def put(name, value):
    out.append(f"{name}={shlex.quote(str(value))}")
def arr(name, items):
    out.append(f"{name}=(" + " ".join(shlex.quote(x) for x in items) + ")")
def refuse(msg):
    print(f"refused={shlex.quote(msg)}")
    sys.exit(0)
try:
    with open(os.path.join(task, "task.toml"), "rb") as f:
        cfg = tomllib.load(f)
except (OSError, tomllib.TOMLDecodeError) as e:
    refuse(f"task.toml: {e}")
def table(name):
    t = cfg.get(name) or {}
    return t if isinstance(t, dict) else {}
env, agent, ver, sol = table("environment"), table("agent"), table("verifier"), table("solution")
# Harbor validates the name (TaskInfo.validate_name_format): org/name.
name = table("task").get("name")
if name is not None and not re.fullmatch(r"[^/\s]+/[^/\s]+", str(name)):
    refuse(f"[task].name {name!r}: must be org/name")
if str(env.get("os", "linux")).lower() != "linux":
    refuse("[environment].os: only linux tasks run on the local Docker environment")
if (env.get("gpus") or 0) > 0:
    refuse("[environment].gpus: the local Docker environment has no GPUs")
imap = dict(p.split("=", 1) for p in os.environ.get("CLIREF_IMAGE_MAP", "").split() if "=" in p)
def mapped(img):
    def norm(s):
        s = s.split("@", 1)[0]
        hub = os.environ.get("CLIREF_HUB", "")
        for pre in [p for p in (hub + "/", "index." + hub + "/") if hub] + ["library/"]:
            if s.startswith(pre):
                s = s[len(pre):]
        return s if ":" in s.rsplit("/", 1)[-1] else s + ":latest"
    for k, v in imap.items():
        if img == k or norm(img) == norm(k):
            return v
    return img
put("docker_image", env.get("docker_image") or "")
put("docker_image_run", mapped(env["docker_image"]) if env.get("docker_image") else "")
put("workdir", env.get("workdir") or "")
put("cpus", env.get("cpus") or "")
mem = env.get("memory_mb")
if isinstance(env.get("memory"), str):
    raw = env["memory"]
    s = raw.strip().upper()
    try:
        m = {"G": lambda x: int(float(x) * 1024), "M": lambda x: int(float(x)), "K": lambda x: int(float(x) / 1024)}[s[-1]](s[:-1])
    except (KeyError, ValueError, IndexError):
        refuse(f"[environment].memory: invalid size {raw!r}")
    if mem is not None and mem != m:
        refuse(f"[environment].memory {raw!r} conflicts with memory_mb {mem}")
    mem = m
put("memory_mb", mem or "")
put("build_timeout", env.get("build_timeout_sec") or 600)
def netmode(v, where):
    if v is None:
        return None
    if v not in ("public", "no-network", "allowlist"):
        refuse(f"{where}.network_mode = {v!r}: unknown network mode")
    return v
# The mode of a phase: its own, else its allowed_hosts (an allowlist), else
# the baseline: [environment].network_mode, else no-network when
# allow_internet is false, else an allowlist when allowed_hosts is set, else
# public. The hosts of an allowlist: those of the phase, else of [environment].
baseline = netmode(env.get("network_mode"), "[environment]") or ("no-network" if env.get("allow_internet") is False else ("allowlist" if env.get("allowed_hosts") else "public"))
def phase_mode(t, where):
    return netmode(t.get("network_mode"), where) or ("allowlist" if t.get("allowed_hosts") else baseline)
put("net_baseline", baseline)
put("net_agent", phase_mode(agent, "[agent]"))
put("net_verifier", phase_mode(ver, "[verifier]"))
put("hosts_baseline", " ".join(env.get("allowed_hosts") or []))
put("hosts_agent", " ".join(agent.get("allowed_hosts") or env.get("allowed_hosts") or []))
put("hosts_verifier", " ".join(ver.get("allowed_hosts") or env.get("allowed_hosts") or []))
put("agent_user", "" if agent.get("user") is None else agent["user"])
put("agent_timeout", agent.get("timeout_sec") or "")
put("verifier_user", "" if ver.get("user") is None else ver["user"])
put("verifier_timeout", ver.get("timeout_sec") or 600)
hc = env.get("healthcheck") or {}
put("hc_command", hc.get("command") or "")
put("hc_interval", hc.get("interval_sec", 5))
put("hc_timeout", int(float(hc.get("timeout_sec", 30))))
put("hc_start_period", hc.get("start_period_sec", 0))
put("hc_start_interval", hc.get("start_interval_sec", 5))
put("hc_retries", hc.get("retries", 3))
# A separate verifier: an explicit mode wins, a [verifier.environment]
# table alone makes one; its environment is that table, else [environment].
mode = ver.get("environment_mode") or ("separate" if ver.get("environment") is not None else "shared")
venv = ver.get("environment") if ver.get("environment") is not None else env
put("separate", "1" if mode == "separate" else "")
put("v_docker_image_run", mapped(venv["docker_image"]) if venv.get("docker_image") else "")
put("v_workdir", venv.get("workdir") or "")
# Artifacts: each a path in main, or a table whose service names the
# compose service it comes from (ArtifactConfig); as arrays of sources and
# services ("" for main).
def artifacts(lst):
    out = []
    for a in lst or []:
        if isinstance(a, str):
            out.append((a, ""))
        elif a.get("source"):
            sv = a.get("service") or ""
            out.append((a["source"], "" if sv == "main" else sv))
    return out
arts = artifacts(cfg.get("artifacts"))
arr("art_src", [a for a, _ in arts])
arr("art_svc", [v for _, v in arts])
# [[verifier.collect]] (VerifierCollectConfig): a command, its service
# ("" for main), timeout and user.
def hooks_of(lst, prefix):
    lst = lst or []
    arr(prefix + "cmds", [str(h.get("command", "")) for h in lst])
    arr(prefix + "svcs", ["" if (h.get("service") or "main") == "main" else h["service"] for h in lst])
    arr(prefix + "timeouts", [str(int(float(h.get("timeout_sec", 60)))) for h in lst])
    arr(prefix + "users", ["" if h.get("user") is None else str(h["user"]) for h in lst])
hooks_of(ver.get("collect"), "collect_")
tmpl = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
def resolve(d, where):
    r = {}
    for k, v in (d or {}).items():
        v = str(v)
        m = tmpl.fullmatch(v)
        if m:
            if m.group(1) in os.environ:
                v = os.environ[m.group(1)]
            elif m.group(2) is not None:
                v = m.group(2)
            else:
                refuse(f"{where}.{k}: the host variable {m.group(1)} is not set")
        r[k] = v
    return r
def eargs(d):
    return [x for k, v in d.items() for x in ("-e", f"{k}={v}")]
base = resolve(env.get("env"), "[environment].env")
arr("env_base", eargs(base))
arr("env_solution", eargs({**base, "DEBIAN_FRONTEND": "noninteractive", **resolve(sol.get("env"), "[solution].env")}))
arr("env_verifier", eargs({**base, **resolve(ver.get("env"), "[verifier].env")}))
# [[steps]] (src/harbor/models/task/config.py): per step its name, the
# agent and verifier settings over the task ones, min_reward as JSON
# ({"reward": x} for a number), the verifier env as step_env_verifier_I.
steps = cfg.get("steps")
if steps:
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        refuse("[[steps]]: must be an array of tables")
    strategy = cfg.get("multi_step_reward_strategy", "mean")
    if strategy not in ("mean", "final"):
        refuse(f"multi_step_reward_strategy = {strategy!r}: only mean and final are re-enacted")
    names, au, at, vu, vt, mins, hcs, hcp = [], [], [], [], [], [], [], []
    ssep, simg, swd = [], [], []
    for i, s in enumerate(steps):
        n = s.get("name")
        if not isinstance(n, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", n) or n in (".", ".."):
            refuse(f"[[steps]] #{i + 1}: name {n!r} is missing or not a plain directory name")
        if n in names:
            refuse(f"[[steps]] {n!r}: the name is repeated")
        shc = s.get("healthcheck") or {}
        hcs.append(str(shc.get("command") or ""))
        hcp.append(" ".join(str(x) for x in (shc.get("interval_sec", 5), int(float(shc.get("timeout_sec", 30))), shc.get("start_period_sec", 0), shc.get("start_interval_sec", 5), shc.get("retries", 3))))
        sa = s.get("agent") or {}
        sv = s.get("verifier") or {}
        if not isinstance(sa, dict) or not isinstance(sv, dict):
            refuse(f"[[steps]] {n!r}: agent and verifier must be tables")
        user = sa.get("user") if sa.get("user") is not None else agent.get("user")
        vuser = sv.get("user") if sv.get("user") is not None else ver.get("user")
        mr = s.get("min_reward")
        if mr is None:
            mins.append("")
        elif isinstance(mr, (int, float)) and not isinstance(mr, bool):
            mins.append(json.dumps({"reward": float(mr)}))
        elif isinstance(mr, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in mr.values()):
            mins.append(json.dumps({k: float(v) for k, v in mr.items()}))
        else:
            refuse(f"[[steps]] {n!r}: min_reward must be a number or a table of numbers")
        names.append(n)
        au.append("" if user is None else str(user))
        at.append(str(sa.get("timeout_sec") or agent.get("timeout_sec") or ""))
        vu.append("" if vuser is None else str(vuser))
        vt.append(str(sv.get("timeout_sec") or ver.get("timeout_sec") or 600))
        arr(f"step_env_verifier_{i}", eargs({**base, **resolve(ver.get("env"), "[verifier].env"), **resolve(sv.get("env"), f"[[steps]] {n!r} verifier.env")}))
        # The verifier mode of the step (models/task/verifier_mode.py): its
        # own environment_mode, else its environment table meaning separate,
        # else the mode of the task; a separate verifier gets the table of
        # the step, else [verifier.environment], else [environment]; its
        # image is built from steps/NAME/tests/ when that exists, else tests/.
        smode = sv.get("environment_mode") or ("separate" if sv.get("environment") is not None else mode)
        senv = sv.get("environment") if sv.get("environment") is not None else venv
        ssep.append("1" if smode == "separate" else "")
        simg.append(mapped(senv["docker_image"]) if senv.get("docker_image") else "")
        swd.append(senv.get("workdir") or "")
        sa_all = arts + artifacts(s.get("artifacts"))
        arr(f"step_art_{i}_src", [a for a, _ in sa_all])
        arr(f"step_art_{i}_svc", [v for _, v in sa_all])
        hooks_of((ver.get("collect") or []) + (sv.get("collect") or []), f"step_collect_{i}_")
    put("steps_n", len(names))
    put("steps_strategy", strategy)
    arr("step_names", names)
    arr("step_agent_user", au)
    arr("step_agent_timeout", at)
    arr("step_verifier_user", vu)
    arr("step_verifier_timeout", vt)
    arr("step_min", mins)
    arr("step_hc", hcs)
    arr("step_hc_params", hcp)
    arr("step_separate", ssep)
    arr("step_v_image_run", simg)
    arr("step_v_workdir", swd)
print("\n".join(out))
'

# The FROM rewriter of --harbor: maps base images in a copy of the
# Dockerfile by CLIREF_IMAGE_MAP (FROM, the ARG defaults before the first
# FROM, COPY --from).
harbor_from_py='
import os, re, sys
path = sys.argv[1]
imap = dict(p.split("=", 1) for p in os.environ.get("CLIREF_IMAGE_MAP", "").split() if "=" in p)
def norm(s):
    s = s.split("@", 1)[0]
    hub = os.environ.get("CLIREF_HUB", "")
    for pre in [p for p in (hub + "/", "index." + hub + "/") if hub] + ["library/"]:
        if s.startswith(pre):
            s = s[len(pre):]
    return s if ":" in s.rsplit("/", 1)[-1] else s + ":latest"
def mapped(img):
    q = img[:1] if img[:1] in "\"\x27" and img[-1:] == img[:1] else ""
    bare = img[1:-1] if q else img
    for k, v in imap.items():
        if bare == k or norm(bare) == norm(k):
            return q + v + q
    return img
lines, seen_from = [], False
for line in open(path).read().split("\n"):
    if path.endswith(".yaml") or path.endswith(".yml"):
        # A compose file: the image: references of its services.
        i = re.match(r"^(\s*image:\s*)(\S+)(.*)$", line)
        if i:
            line = i.group(1) + mapped(i.group(2)) + i.group(3)
        lines.append(line)
        continue
    m = re.match(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", line, re.I)
    if m:
        seen_from = True
        line = m.group(1) + m.group(2) + mapped(m.group(3)) + m.group(4)
    elif not seen_from:
        a = re.match(r"^(\s*ARG\s+\w+=)(\S+)(.*)$", line, re.I)
        if a:
            line = a.group(1) + mapped(a.group(2)) + a.group(3)
    c = re.match(r"^(\s*COPY\s+(?:--\S+\s+)*--from=)(\S+)(.*)$", line, re.I)
    if c:
        line = c.group(1) + mapped(c.group(2)) + c.group(3)
    # COPY --chmod=MODE SRC FILE is BuildKit syntax (Harbor builds with
    # docker compose, which uses BuildKit; this engine CLI builds without):
    # the same file and mode, in two steps the classic builder takes.
    k = re.match(r"^(\s*COPY\s+)--chmod=([0-7]{3,4})\s+(\S+)\s+(/\S*[^/\s])\s*$", line, re.I)
    if k:
        lines.append(k.group(1) + k.group(3) + " " + k.group(4))
        line = "RUN chmod " + k.group(2) + " " + k.group(4)
    lines.append(line)
open(path, "w").write("\n".join(lines))
'

# The reward reader of --harbor: Harbor's verifier (src/harbor/verifier/
# verifier.py): reward.json if it exists (its numeric keys; reward.txt's
# value when it has no "reward"), else reward.txt as a float. Prints the
# "reward" value (without one, the lowest key) or none; the whole rewards
# on stderr when verbose, and as JSON (null without one) to the file given
# third (a step of a multi-step task).
harbor_reward_py='
import json, os, sys
d, verbose = sys.argv[1], sys.argv[2] == "1"
j, t = os.path.join(d, "reward.json"), os.path.join(d, "reward.txt")
def txt():
    s = open(t).read()
    float(s)
    return s.strip()
rewards = None
try:
    if os.path.exists(j):
        parsed = json.loads(open(j).read())
        if not isinstance(parsed, dict):
            raise ValueError("reward.json is not an object")
        rewards = {k: v for k, v in parsed.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if "reward" not in rewards and os.path.exists(t):
            try:
                rewards["reward"] = txt()
            except ValueError:
                pass
    elif os.path.exists(t):
        rewards = {"reward": txt()}
except (ValueError, OSError) as e:
    print(f"cli-reference: the reward could not be read: {e}", file=sys.stderr)
if verbose:
    print(f"cli-reference: rewards {rewards}", file=sys.stderr)
if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        json.dump(rewards, f)
r = (rewards or {}).get("reward")
if r is None and rewards:
    # Harbor records each key; a trial passes only when every key does, so
    # the lowest key stands for the trial (flightdeck reads it so too).
    r = min(rewards.values())
print("none" if r is None else (r if isinstance(r, str) else json.dumps(r)))
'

# The step rewards of --harbor for a multi-step task (Harbor's trial,
# src/harbor/trial/trial.py), each step's a JSON file written by
# harbor_reward_py (null when the step has no reward):
#   gate REWARDS MIN_REWARD  exits 1 when a gated key is below its threshold
#                            or missing (missing counts as -inf);
#   total STRATEGY VERBOSE REWARDS...  the trial's rewards from the executed
#     steps' in order: final, the last step's; mean, per key the mean over
#     the steps with a reward (a key a step lacks counts as 0). Prints the
#     "reward" value as harbor_reward_py does (a mean of equal values keeps
#     their formatting), or none.
harbor_steps_py='
import json, math, sys
def load(p):
    with open(p) as f:
        return json.load(f)
if sys.argv[1] == "gate":
    rewards, gate = load(sys.argv[2]) or {}, json.loads(sys.argv[3])
    for k, th in gate.items():
        v = -math.inf if rewards.get(k) is None else float(rewards[k])
        if v < th:
            sys.exit(1)
    sys.exit(0)
strategy, verbose, steps = sys.argv[2], sys.argv[3] == "1", [load(p) for p in sys.argv[4:]]
if strategy == "final":
    total = steps[-1] if steps else None
else:
    got = [s for s in steps if s is not None]
    total = None
    if got:
        total = {}
        for k in dict.fromkeys(k for s in got for k in s):
            vals = [s.get(k, 0) for s in got]
            nums = [float(v) for v in vals]
            total[k] = vals[0] if all(n == nums[0] for n in nums) else sum(nums) / len(nums)
if verbose:
    print(f"cli-reference: the trial ({strategy} of {len(steps)} steps): rewards {total}", file=sys.stderr)
r = (total or {}).get("reward")
if r is None and total:
    r = min(total.values(), key=float)
print("none" if r is None else (r if isinstance(r, str) else json.dumps(r)))
'

# harbor_trial TASK_DIR AGENT [RUN_ID]: one trial the way Harbor runs it on
# its local Docker environment in the shared mode (checked against Harbor's
# src/harbor/environments/docker/, src/harbor/trial/trial.py,
# src/harbor/agents/oracle.py and src/harbor/verifier/verifier.py):
#  1. docker build environment/ (FROM mapped) as Harbor's compose build does,
#     or take [environment].docker_image without a build;
#  2. docker run -d ONE container with the image's ENTRYPOINT kept and the
#     command sh -c "sleep infinity" (Harbor's compose `command`), the host's
#     trial dirs bind-mounted on /logs/agent, /logs/verifier and
#     /logs/artifacts, --cpus and --memory from the task, --network none when
#     the baseline is no-network; wait for the image's own HEALTHCHECK if it
#     has one (compose up --wait); mkdir and chmod 777 the /logs dirs as root;
#     a docker_image task without a Dockerfile gets environment/ copied into
#     its work dir;
#  3. poll [environment.healthcheck] (start period, interval, retries);
#  4. the agent phase, with its network (docker network disconnect/connect
#     when [agent].network_mode differs from the baseline): the oracle gets
#     solution/ copied to /solution, chmod +x /solution/solve.sh as root, then
#     `(/solution/solve.sh) > /logs/agent/oracle.txt 2>&1` as [agent].user with
#     [environment].env, DEBIAN_FRONTEND=noninteractive and [solution].env,
#     within [agent].timeout_sec (on a timeout the docker exec client is
#     killed, as Harbor's is: what solve.sh started keeps running); nop runs
#     nothing;
#  5. the verifier phase, IN THE SAME LIVE CONTAINER, with its network: tests/
#     copied onto /tests (merged with whatever is there), chmod +x
#     /tests/test.sh as root, `(/tests/test.sh) > /logs/verifier/test-stdout.txt
#     2>&1` as [verifier].user with [environment].env then [verifier].env,
#     within [verifier].timeout_sec, its exit code ignored;
#  6. the reward read on the host side of /logs/verifier; the /logs files
#     chowned to the host user; the container (and the image) removed.
# Every exec runs `bash -c` in [environment].workdir when it is set (else
# the image's WORKDIR) with [environment].env; as in Harbor, that env is
# given to each exec, not to the container, so the image's ENTRYPOINT does
# not see it. A multi-step task ([[steps]]) takes phases 4 to 6 once per
# step (harbor_steps); a separate verifier (the task's, or a step's as
# Harbor resolves it) runs in harbor_separate, with the artifacts and collect
# commands of main and of the compose sidecars. Refused (none, exit 1): a
# reward strategy other than mean and final, Windows, GPUs. Differences from Harbor: docker CLI instead of docker
# compose; a phase's network is switched with docker network
# disconnect/connect (Harbor's local Docker environment either sets
# network_mode none for the whole trial or, in some versions, applies
# iptables rules); no retry of a timed-out verifier.
harbor_trial() {
  if [ $# -lt 2 ] || [ $# -gt 3 ] || { [ "$2" != oracle ] && [ "$2" != nop ]; }; then
    echo "usage: $0 --harbor TASK_DIR oracle|nop [RUN_ID]" >&2
    exit 2
  fi
  local task agent run name tag verbose
  task="$(cd "$1" && pwd)"
  agent="$2"
  run="${3:-cliref-harbor-$$}"
  verbose="${CLIREF_VERBOSE:-}"
  name="$(basename "$task" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9._\n-' '-')"
  tag="flightdeck-cliref/${name}:$(printf '%s' "$run" | tr -c 'A-Za-z0-9_.-' '-' | cut -c1-128)"
  labels=(--label flightdeck.managed=true --label "flightdeck.run=${run}" --label flightdeck.kind=cliref-harbor)
  hout="$(mktemp -d "${TMPDIR:-/tmp}/flightdeck-cliref.XXXXXX")"
  hcid=""
  himage=""
  hbuilt=""
  mkdir -p "$hout/logs/agent" "$hout/logs/verifier" "$hout/logs/artifacts"
  chmod 777 "$hout/logs/agent" "$hout/logs/verifier" "$hout/logs/artifacts"
  trap harbor_cleanup EXIT
  trap 'exit 130' INT TERM

  # Fail the trial: the reason on stderr, `none` on stdout, exit 1.
  hfail() {
    echo "cli-reference: $*" >&2
    echo none
    exit 1
  }
  say() { if [ -n "$verbose" ]; then echo "cli-reference: $*" >&2; fi; }

  local refused=""
  local docker_image docker_image_run workdir cpus memory_mb build_timeout
  local net_baseline net_agent net_verifier agent_user agent_timeout verifier_user verifier_timeout
  local hc_command hc_interval hc_timeout hc_start_period hc_start_interval hc_retries
  local toml_out steps_n=0 steps_strategy=""
  local step_names=() step_agent_user=() step_agent_timeout=() step_verifier_user=() step_verifier_timeout=() step_min=() step_hc=() step_hc_params=()
  local step_separate=() step_v_image_run=() step_v_workdir=()
  # The default registry's domain, as the engine names it, for matching
  # image references in their normalized and short forms.
  CLIREF_HUB="$(docker info --format '{{.IndexServerAddress}}' 2>/dev/null | sed -E 's#^[a-z]+://##; s#/.*##; s#^index\.##')"
  export CLIREF_HUB
  toml_out="$(python3 -c "$harbor_toml_py" "$task")" || hfail "could not read $task/task.toml"
  eval "$toml_out"
  [ -z "$refused" ] || hfail "refused: $refused"
  # Harbor's Docker environment looks for this name only: a
  # docker-compose.yml is workspace content.
  local compose=""
  [ -e "$task/environment/docker-compose.yaml" ] && compose=1
  if [ "$steps_n" -gt 0 ]; then
    local sname ssol
    local si
    for si in "${!step_names[@]}"; do
      sname="${step_names[$si]}"
      [ -n "${step_separate[$si]}" ] || [ -f "$task/steps/$sname/tests/test.sh" ] || [ -f "$task/tests/test.sh" ] || hfail "refused: step $sname: no tests/test.sh"
      ssol="$task/solution"
      [ -d "$task/steps/$sname/solution" ] && ssol="$task/steps/$sname/solution"
      if [ "$agent" = oracle ] && [ ! -f "$ssol/solve.sh" ]; then
        hfail "refused: step $sname: no solve.sh for the oracle in ${ssol#"$task"/}/"
      fi
    done
  else
    [ -f "$task/tests/test.sh" ] || hfail "refused: no tests/test.sh"
    if [ "$agent" = oracle ] && [ ! -f "$task/solution/solve.sh" ]; then
      hfail "refused: no solution/solve.sh for the oracle"
    fi
  fi

  # 1. The image. A compose task's file (and its services' build contexts)
  # come from a copy of environment/, whatever main's image is.
  if [ -n "$compose" ]; then
    mkdir -p "$hout/context"
    cp -a "$task/environment/." "$hout/context/"
    local f
    while IFS= read -r f; do python3 -c "$harbor_from_py" "$f"; done < <(find "$hout/context" -name 'Dockerfile*' -type f)
    python3 -c "$harbor_from_py" "$hout/context/docker-compose.yaml"
  fi
  if [ -n "$docker_image" ]; then
    himage="$docker_image_run"
    docker image inspect "$himage" >/dev/null 2>&1 || hfail "[environment].docker_image $himage is not on the engine (nothing is pulled)"
  else
    [ -f "$task/environment/Dockerfile" ] || hfail "refused: no environment/Dockerfile"
    if [ -z "$compose" ]; then
      mkdir -p "$hout/context"
      cp -a "$task/environment/." "$hout/context/"
      python3 -c "$harbor_from_py" "$hout/context/Dockerfile"
    fi
    if ! timeout "$build_timeout" docker build -q --force-rm -t "$tag" "${labels[@]}" "$hout/context" >/dev/null 2>"$hout/build.log"; then
      tail -20 "$hout/build.log" >&2
      hfail "the build of environment/ failed"
    fi
    himage="$tag"
    hbuilt=1
  fi

  # 2. The container. A trial with an allowlist phase gets a gateway the
  # task's container shares its network with (Harbor installs iptables
  # rules allowing the resolved hosts; the gateway holds them, out of the
  # agent's reach): gw_policy sets each phase's rules.
  if [ "$net_agent" = allowlist ] || [ "$net_verifier" = allowlist ]; then
    harbor_gateway || hfail "the allowlist gateway could not be started"
  fi
  local run_args=(-d "${labels[@]}")
  if [ -n "${hgwimage:-}" ] && [ -z "$compose" ]; then
    run_args+=(--network "container:$hgw")
  elif [ "$net_baseline" = no-network ]; then
    run_args+=(--network none)
  fi
  [ -n "$cpus" ] && run_args+=(--cpus "$cpus")
  [ -n "$memory_mb" ] && run_args+=(--memory "${memory_mb}m")
  run_args+=(-v "$hout/logs/agent:/logs/agent" -v "$hout/logs/verifier:/logs/verifier" -v "$hout/logs/artifacts:/logs/artifacts")
  if [ -n "$compose" ]; then
    harbor_compose_up || hfail "docker-compose up failed: $(tail -5 "$hout/compose.log")"
    [ -z "${hgwimage:-}" ] || hgw="$("${hcompose[@]}" ps -q fdegress)"
  else
    hcid="$(docker run "${run_args[@]}" "$himage" sh -c "sleep infinity")" || hfail "docker run failed"
  fi
  if [ -n "$(docker image inspect -f '{{if .Config.Healthcheck}}{{if ne (index .Config.Healthcheck.Test 0) "NONE"}}yes{{end}}{{end}}' "$himage")" ]; then
    local state waited=0
    while :; do
      state="$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$hcid")"
      case "$state" in
        "running healthy") break ;;
        "running unhealthy") hfail "the image's HEALTHCHECK reports unhealthy" ;;
        running*) ;;
        *) hfail "the container is $state" ;;
      esac
      waited=$((waited + 1))
      [ "$waited" -lt 600 ] || hfail "the image's HEALTHCHECK did not pass in 600 s"
      sleep 1
    done
  fi
  [ "$(docker inspect -f '{{.State.Running}}' "$hcid")" = true ] || hfail "the container exited at start: $(docker logs --tail 5 "$hcid" 2>&1)"
  local cur_net="$net_baseline"
  set_net() {
    if [ -n "${hgw:-}" ]; then
      gw_policy "$1" "$2"
      return 0
    fi
    [ "$1" = "$cur_net" ] && return 0
    if [ "$1" = public ]; then
      docker network disconnect none "$hcid" >/dev/null 2>&1 || true
      docker network connect bridge "$hcid"
    else
      docker network disconnect bridge "$hcid"
    fi
    cur_net="$1"
  }
  # dexec USER TIMEOUT COMMAND [-e K=V]...: Harbor's exec (bash -c, the work
  # dir, the env, the user); prints nothing, returns the exit code (124 on
  # a timeout).
  dexec() {
    local user="$1" tmo="$2" cmd="$3"
    shift 3
    local a=(exec)
    [ -n "$workdir" ] && a+=(-w "$workdir")
    a+=("$@")
    [ -n "$user" ] && a+=(-u "$user")
    a+=("$hcid" bash -c "$cmd")
    if [ -n "$tmo" ]; then
      timeout -k 5 "$tmo" docker "${a[@]}"
    else
      docker "${a[@]}"
    fi
  }
  # run_oracle SOLUTION_DIR USER TIMEOUT REDIRECT LABEL: Harbor's oracle:
  # SOLUTION_DIR copied to /solution, solve.sh run as USER, its output to
  # /logs/agent/oracle.txt (REDIRECT is > or >>); its exit is only said.
  run_oracle() {
    local sol="$1" user="$2" tmo="$3" redir="$4" label="$5" orc=0
    docker cp "$sol/." "$hcid:/solution"
    dexec root "" "chmod +x /solution/solve.sh" "${env_base[@]}" >/dev/null 2>&1 || true
    dexec "$user" "$tmo" "(/solution/solve.sh) $redir /logs/agent/oracle.txt 2>&1" "${env_solution[@]}" || orc=$?
    if [ "$orc" = 124 ] && [ -n "$tmo" ]; then
      say "$label timed out after ${tmo} s (what it started keeps running)"
    else
      say "$label exited $orc"
    fi
  }
  local d ensure=""
  for d in /logs/agent /logs/verifier /logs/artifacts; do
    ensure="${ensure:+$ensure && }if [ -L $d ] || { [ -e $d ] && [ ! -d $d ]; }; then rm -rf $d; fi && mkdir -p $d && chmod 777 $d"
  done
  dexec root "" "$ensure" "${env_base[@]}" >/dev/null 2>&1 || true
  if [ -n "$docker_image" ] && [ ! -e "$task/environment/Dockerfile" ] && [ -d "$task/environment" ] && [ -n "$(ls -A "$task/environment")" ]; then
    local wd="$workdir"
    [ -n "$wd" ] || wd="$(docker exec "$hcid" bash -c pwd)"
    docker cp "$task/environment/." "$hcid:$wd"
  fi

  # 3. [environment.healthcheck].
  if [ -n "$hc_command" ]; then
    local rc start_end failures=0
    start_end="$(python3 -c 'import sys,time; print(time.monotonic() + float(sys.argv[1]))' "$hc_start_period")"
    while :; do
      rc=0
      dexec "" "$hc_timeout" "$hc_command" "${env_base[@]}" >/dev/null 2>&1 || rc=$?
      [ "$rc" = 0 ] && break
      [ "$rc" = 124 ] && hfail "the healthcheck timed out after ${hc_timeout} s"
      if python3 -c 'import sys,time; sys.exit(0 if time.monotonic() < float(sys.argv[1]) else 1)' "$start_end"; then
        sleep "$hc_start_interval"
      else
        failures=$((failures + 1))
        [ "$failures" -lt "$hc_retries" ] || hfail "the healthcheck failed $hc_retries times: $hc_command"
        sleep "$hc_interval"
      fi
    done
    say "healthcheck passed"
  fi

  if [ "$steps_n" -gt 0 ]; then
    harbor_steps
    return
  fi

  # 4. The agent phase.
  set_net "$net_agent" "$hosts_agent"
  if [ "$agent" = oracle ]; then
    run_oracle "$task/solution" "$agent_user" "$agent_timeout" ">" "the oracle"
  fi
  set_net "$net_baseline" "$hosts_baseline"

  if [ -n "$separate" ]; then
    harbor_separate "$task/tests" "$v_docker_image_run" "$v_workdir" "$verifier_user" "$verifier_timeout" env_verifier art_ collect_ 1 "$hout/vverifier"
    python3 -c "$harbor_reward_py" "$hout/vverifier" "${verbose:-0}"
    return
  fi
  # [[verifier.collect]]: each command in its service, before the
  # verifier; a failure is only said.
  run_hooks collect_ main
  run_hooks collect_ sidecars

  # 5. The verifier phase, in the same container.
  set_net "$net_verifier" "$hosts_verifier"
  docker cp "$task/tests/." "$hcid:/tests"
  dexec root "" "chmod +x /tests/test.sh" "${env_base[@]}" >/dev/null 2>&1 || true
  local trc=0
  dexec "$verifier_user" "$verifier_timeout" "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1" "${env_verifier[@]}" || trc=$?
  [ "$trc" = 124 ] && hfail "the verifier timed out after ${verifier_timeout} s"
  say "test.sh exited $trc"

  # 6. The reward, from the host side of /logs/verifier.
  docker exec -u root "$hcid" chown -R "$(id -u):$(id -g)" /logs/agent /logs/verifier /logs/artifacts >/dev/null 2>&1 || true
  python3 -c "$harbor_reward_py" "$hout/logs/verifier" "${verbose:-0}"
}

# svc_cid SERVICE: the container of a compose service of the trial; main's
# for "".
svc_cid() {
  if [ -z "$1" ]; then
    echo "$hcid"
  elif [ -n "${hproj:-}" ]; then
    "${hcompose[@]}" ps -q "$1" 2>/dev/null || true
  fi
}

# run_hooks PREFIX main|sidecars: the [[verifier.collect]] commands of the
# arrays PREFIXcmds, PREFIXsvcs, PREFIXtimeouts and PREFIXusers that run in
# main (bash -c, as any exec there) or in a sidecar (sh -c, as Harbor runs
# a sidecar's); a failure is only said.
run_hooks() {
  local p="$1" which="$2" ci id
  local cmds=() svcs=() tos=() us=() ua=()
  eval "cmds=(\"\${${p}cmds[@]}\"); svcs=(\"\${${p}svcs[@]}\"); tos=(\"\${${p}timeouts[@]}\"); us=(\"\${${p}users[@]}\")"
  for ci in "${!cmds[@]}"; do
    if [ "$which" = main ]; then [ -z "${svcs[$ci]}" ] || continue; else [ -n "${svcs[$ci]}" ] || continue; fi
    if [ -z "${svcs[$ci]}" ]; then
      dexec "${us[$ci]}" "${tos[$ci]}" "${cmds[$ci]}" "${env_base[@]}" >/dev/null 2>&1 || say "verifier.collect #$((ci + 1)) failed"
      continue
    fi
    id="$(svc_cid "${svcs[$ci]}")"
    if [ -z "$id" ]; then
      say "verifier.collect #$((ci + 1)): no service ${svcs[$ci]}"
      continue
    fi
    ua=()
    [ -n "${us[$ci]}" ] && ua=(-u "${us[$ci]}")
    timeout -k 5 "${tos[$ci]}" docker exec "${ua[@]}" "$id" sh -c "${cmds[$ci]}" >/dev/null 2>&1 || say "verifier.collect #$((ci + 1)) in ${svcs[$ci]} failed"
  done
}

# take_artifacts PREFIX main|sidecars: the artifacts of the arrays PREFIXsrc
# and PREFIXsvc that come from main or from a sidecar, each copied into
# $hout/art/N/ (N: its place in the list, from 1).
take_artifacts() {
  local p="$1" which="$2" i id
  local srcs=() svcs=()
  eval "srcs=(\"\${${p}src[@]}\"); svcs=(\"\${${p}svc[@]}\")"
  for i in "${!srcs[@]}"; do
    if [ "$which" = main ]; then [ -z "${svcs[$i]}" ] || continue; else [ -n "${svcs[$i]}" ] || continue; fi
    mkdir -p "$hout/art/$((i + 1))"
    id="$(svc_cid "${svcs[$i]}")"
    if [ -z "$id" ] || ! docker cp "$id:${srcs[$i]}" "$hout/art/$((i + 1))/" >/dev/null 2>&1; then
      say "artifact ${srcs[$i]}: not copied"
    fi
  done
}

# harbor_separate CONTEXT IMAGE WORKDIR USER TIMEOUT ENV ARTS HOOKS STOP OUT:
# phases 5 and 6 of harbor_trial (or of a step) for a separate verifier, as
# Harbor's trial runs one: main's collect commands, main's artifacts copied
# out; when STOP (the last use of the task's container) the container
# stopped; the sidecars' collect commands and artifacts; the verifier's
# image built from CONTEXT (its Dockerfile, FROM mapped) or IMAGE; a
# container of it (its entrypoint, `sleep infinity`, the verifier's
# network) with OUT as /logs/verifier and the trial's /logs/artifacts; the
# artifacts copied back at their paths; /tests/test.sh (the image's) run
# as USER in WORKDIR with the env array named ENV. ARTS and HOOKS are the
# prefixes of the artifact and collect-command arrays (take_artifacts,
# run_hooks). The caller reads the reward from OUT.
harbor_separate() {
  local ctx="$1" vimg="$2" vwd="$3" vuser="$4" vto="$5" envname="$6" ap="$7" hp="$8" stop="$9" vout="${10}"
  local i vimage trc=0 vrun=(-d "${labels[@]}") venv=() srcs=()
  eval "venv=(\"\${${envname}[@]}\"); srcs=(\"\${${ap}src[@]}\")"
  rm -rf "$hout/art"
  mkdir -p "$hout/art" "$vout"
  chmod 777 "$vout"
  run_hooks "$hp" main
  take_artifacts "$ap" main
  [ -z "$stop" ] || docker stop -t 0 "$hcid" >/dev/null
  run_hooks "$hp" sidecars
  take_artifacts "$ap" sidecars
  if [ -n "$vimg" ]; then
    vimage="$vimg"
  else
    rm -rf "$hout/vcontext"
    mkdir -p "$hout/vcontext"
    cp -a "$ctx/." "$hout/vcontext/"
    python3 -c "$harbor_from_py" "$hout/vcontext/Dockerfile"
    vimage="${tag}-verifier-$(printf '%s' "$vout" | cksum | cut -d' ' -f1)"
    hvimages="${hvimages:-} $vimage"
    docker build -q --force-rm -t "$vimage" "${labels[@]}" "$hout/vcontext" >/dev/null 2>>"$hout/build.log" || hfail "the build of the verifier's ${ctx#"$task"/}/ failed"
  fi
  [ "$net_verifier" = no-network ] && vrun+=(--network none)
  vrun+=(-v "$vout:/logs/verifier" -v "$hout/logs/artifacts:/logs/artifacts")
  hvcid="$(docker run "${vrun[@]}" "$vimage" sh -c "sleep infinity")" || hfail "docker run of the verifier failed"
  for i in "${!srcs[@]}"; do
    case "${srcs[$i]}" in /logs/artifacts | /logs/artifacts/*) continue ;; esac
    [ -e "$hout/art/$((i + 1))/$(basename "${srcs[$i]}")" ] || continue
    docker exec -u root "$hvcid" mkdir -p "$(dirname "${srcs[$i]}")"
    docker cp "$hout/art/$((i + 1))/$(basename "${srcs[$i]}")" "$hvcid:$(dirname "${srcs[$i]}")/"
  done
  docker exec -u root "$hvcid" chmod +x /tests/test.sh >/dev/null 2>&1 || true
  local va=(exec)
  [ -n "$vwd" ] && va+=(-w "$vwd")
  va+=("${venv[@]}")
  [ -n "$vuser" ] && va+=(-u "$vuser")
  timeout -k 5 "$vto" docker "${va[@]}" "$hvcid" bash -c "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1" || trc=$?
  [ "$trc" = 124 ] && hfail "the verifier timed out after ${vto} s"
  say "test.sh exited $trc (separate verifier)"
  docker exec -u root "$hvcid" chown -R "$(id -u):$(id -g)" /logs/verifier /logs/artifacts >/dev/null 2>&1 || true
  docker rm -f "$hvcid" >/dev/null 2>&1 || true
  hvcid=""
}

# harbor_steps: phases 4 to 6 of harbor_trial for a multi-step task, as
# Harbor's trial runs its steps, in order, in the trial's one container
# (called from harbor_trial, whose locals and helpers it uses):
#  1. steps/NAME/workdir/ copied into the work dir, then its setup.sh run
#     (bash WORKDIR/setup.sh) as the step's agent user; a non-zero exit ends
#     the trial's steps there (that step is not verified and has no reward);
#  2. the agent with the step's agent user and timeout: the oracle gets
#     steps/NAME/solution/ (else solution/) copied to /solution and runs
#     solve.sh as in phase 4, its output appended to /logs/agent/oracle.txt;
#     nop runs nothing (steps/NAME/instruction.md is the instruction, which
#     neither reads);
#  3. /logs/verifier and /tests made anew, tests/ then steps/NAME/tests/
#     copied onto /tests, test.sh run as in phase 5 with the step's verifier
#     user, timeout and env; the step's rewards read as in phase 6 and its
#     /logs/verifier kept (CLIREF_LOGS/steps/NAME/verifier);
#  4. min_reward: a gated key below its threshold, or missing, ends the
#     trial's steps there.
# The trial's reward: multi_step_reward_strategy over the executed steps
# (harbor_steps_py total).
harbor_steps() {
  local i sname sdir sout wd ssol rc trc
  local step_rewards=() senv=()
  wd="$workdir"
  [ -n "$wd" ] || wd="$(docker exec "$hcid" bash -c pwd)"
  for i in "${!step_names[@]}"; do
    sname="${step_names[$i]}"
    sdir="$task/steps/$sname"
    sout="$hout/steps/$sname"
    mkdir -p "$sout"
    echo null >"$sout/rewards.json"
    step_rewards+=("$sout/rewards.json")

    # 1. The step's work dir and setup.sh.
    set_net "$net_agent" "$hosts_agent"
    if [ -d "$sdir/workdir" ]; then
      docker cp "$sdir/workdir/." "$hcid:$wd"
      if [ -f "$sdir/workdir/setup.sh" ]; then
        rc=0
        dexec "${step_agent_user[$i]}" "" "bash $(printf '%q' "$wd/setup.sh")" "${env_base[@]}" >"$sout/setup.txt" 2>&1 || rc=$?
        if [ "$rc" != 0 ]; then
          say "step $sname: setup.sh exited $rc; the remaining steps are not run"
          set_net "$net_baseline" "$hosts_baseline"
          break
        fi
        say "step $sname: setup.sh exited 0"
      fi
    fi
    # The step's healthcheck, after its setup and before its agent (its
    # artifacts do not change a reward and are not collected here).
    if [ -n "${step_hc[$i]}" ]; then
      local hci hct hcsp hcsi hcr hcrc hcf=0 hcend
      read -r hci hct hcsp hcsi hcr <<<"${step_hc_params[$i]}"
      hcend="$(python3 -c 'import sys,time; print(time.monotonic() + float(sys.argv[1]))' "$hcsp")"
      while :; do
        hcrc=0
        dexec "" "$hct" "${step_hc[$i]}" "${env_base[@]}" >/dev/null 2>&1 || hcrc=$?
        [ "$hcrc" = 0 ] && break
        if python3 -c 'import sys,time; sys.exit(0 if time.monotonic() < float(sys.argv[1]) else 1)' "$hcend"; then
          sleep "$hcsi"
        else
          hcf=$((hcf + 1))
          [ "$hcf" -lt "$hcr" ] || break
          sleep "$hci"
        fi
      done
      if [ "$hcrc" != 0 ]; then
        say "step $sname: its healthcheck failed; the remaining steps are not run"
        set_net "$net_baseline" "$hosts_baseline"
        break
      fi
    fi

    # 2. The agent.
    if [ "$agent" = oracle ]; then
      ssol="$task/solution"
      [ -d "$sdir/solution" ] && ssol="$sdir/solution"
      run_oracle "$ssol" "${step_agent_user[$i]}" "${step_agent_timeout[$i]}" ">>" "step $sname: the oracle"
    fi
    set_net "$net_baseline" "$hosts_baseline"

    # 3. A separate verifier: its own container (harbor_separate), from
    # steps/NAME/tests/ when that exists, else tests/; the task's container
    # is stopped only after the last step.
    eval "senv=(\"\${step_env_verifier_${i}[@]}\")"
    if [ -n "${step_separate[$i]}" ]; then
      local sctx="$task/tests" slast=""
      [ -d "$sdir/tests" ] && sctx="$sdir/tests"
      [ "$i" = "$((${#step_names[@]} - 1))" ] && slast=1
      harbor_separate "$sctx" "${step_v_image_run[$i]}" "${step_v_workdir[$i]}" "${step_verifier_user[$i]}" "${step_verifier_timeout[$i]}" \
        senv "step_art_${i}_" "step_collect_${i}_" "$slast" "$sout/verifier"
    else
      # The collect commands of the task and the step, then the verifier,
      # on a fresh /logs/verifier (a bind mount: emptied) and a fresh /tests.
      run_hooks "step_collect_${i}_" main
      run_hooks "step_collect_${i}_" sidecars
      harbor_step_shared
    fi
    python3 -c "$harbor_reward_py" "$sout/verifier" 0 "$sout/rewards.json" >/dev/null
    say "step $sname: rewards $(cat "$sout/rewards.json")"

    # 4. min_reward.
    if [ -n "${step_min[$i]}" ] && ! python3 -c "$harbor_steps_py" gate "$sout/rewards.json" "${step_min[$i]}"; then
      say "step $sname: below its min_reward ${step_min[$i]}; the remaining steps are not run"
      break
    fi
  done
  python3 -c "$harbor_steps_py" total "$steps_strategy" "${verbose:-0}" "${step_rewards[@]}"
}

# harbor_step_shared: a shared step's verifier in the task's container
# (harbor_steps' locals): /logs/verifier and /tests made anew, tests/ then
# steps/NAME/tests/ copied in, test.sh run; /logs/verifier kept in
# $sout/verifier.
harbor_step_shared() {
  set_net "$net_verifier" "$hosts_verifier"
  dexec root "" "rm -rf /logs/verifier /tests 2>/dev/null; mkdir -p /logs/verifier /tests && chmod 777 /logs/verifier" "${env_base[@]}" >/dev/null 2>&1 || true
  if [ -d "$task/tests" ]; then
    docker cp "$task/tests/." "$hcid:/tests"
  fi
  if [ -d "$sdir/tests" ]; then
    docker cp "$sdir/tests/." "$hcid:/tests"
  fi
  dexec root "" "chmod +x /tests/test.sh" "${env_base[@]}" >/dev/null 2>&1 || true
  trc=0
  dexec "${step_verifier_user[$i]}" "${step_verifier_timeout[$i]}" "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1" "${senv[@]}" || trc=$?
  [ "$trc" = 124 ] && hfail "step $sname: the verifier timed out after ${step_verifier_timeout[$i]} s"
  say "step $sname: test.sh exited $trc"
  set_net "$net_baseline" "$hosts_baseline"
  docker exec -u root "$hcid" chown -R "$(id -u):$(id -g)" /logs/agent /logs/verifier /logs/artifacts >/dev/null 2>&1 || true
  cp -a "$hout/logs/verifier" "$sout/verifier"
}

# harbor_compose_up: a multi-container task the way Harbor's Docker
# environment starts one, with Debian's docker-compose as the client: a base
# file defining main (the task image, `sleep infinity`, the /logs mounts)
# and the task's docker-compose.yaml over it, `up -d` (which waits for the
# conditions of depends_on), main's container as hcid. A phase without a
# network gets an internal default network, as flightdeck gives it (the
# services stay reachable; the outside does not).
harbor_compose_up() {
  hproj="fdcliref$$${RANDOM}"
  {
    echo "services:"
    echo "  main:"
    echo "    image: \"$himage\""
    echo "    command: [\"sh\", \"-c\", \"sleep infinity\"]"
    echo "    labels: {flightdeck.managed: \"true\", flightdeck.run: \"$run\", flightdeck.kind: cliref-harbor}"
    echo "    volumes: [\"$hout/logs/agent:/logs/agent\", \"$hout/logs/verifier:/logs/verifier\", \"$hout/logs/artifacts:/logs/artifacts\"]"
    [ -n "$cpus" ] && echo "    cpus: $cpus"
    [ -n "$memory_mb" ] && echo "    mem_limit: ${memory_mb}m"
    if [ -n "${hgwimage:-}" ]; then
      echo "    network_mode: \"service:fdegress\""
      echo "  fdegress:"
      echo "    image: \"$hgwimage\""
      echo "    command: [\"sleep\", \"infinity\"]"
      echo "    cap_add: [NET_ADMIN]"
      echo "    labels: {flightdeck.managed: \"true\", flightdeck.run: \"$run\", flightdeck.kind: cliref-harbor}"
      echo "    networks: {default: {aliases: [main]}}"
    elif [ "$net_agent" = no-network ] || [ "$net_verifier" = no-network ]; then
      echo "networks:"
      echo "  default:"
      echo "    internal: true"
    fi
  } > "$hout/compose-base.yaml"
  # The variables Harbor's Docker environment hands compose: the build
  # context, main's image, the resources and the log dirs' host and
  # container paths (a sidecar may bind ${HOST_ARTIFACTS_PATH}).
  local hvars=(CONTEXT_DIR="$hout/context" MAIN_IMAGE_NAME="$himage"
    HOST_AGENT_LOGS_PATH="$hout/logs/agent" ENV_AGENT_LOGS_PATH=/logs/agent
    HOST_VERIFIER_LOGS_PATH="$hout/logs/verifier" ENV_VERIFIER_LOGS_PATH=/logs/verifier
    HOST_ARTIFACTS_PATH="$hout/logs/artifacts" ENV_ARTIFACTS_PATH=/logs/artifacts)
  [ -n "$cpus" ] && hvars+=(CPUS="$cpus")
  [ -n "$memory_mb" ] && hvars+=(MEMORY="${memory_mb}M")
  hcompose=(env "${hvars[@]}" docker-compose -p "$hproj" --project-directory "$hout/context" -f "$hout/compose-base.yaml" -f "$hout/context/docker-compose.yaml")
  "${hcompose[@]}" up -d >"$hout/compose.log" 2>&1 || return 1
  hcid="$("${hcompose[@]}" ps -q main 2>>"$hout/compose.log")"
  [ -n "$hcid" ]
}

# harbor_gateway: the allowlist gateway's image (the base with Debian's
# iptables) and, for a single-container task, its network and container;
# a compose task's gateway is a service of its project (harbor_compose_up).
harbor_gateway() {
  hgwimage="${tag}-egress"
  printf 'FROM flightdeck/base:bookworm\nRUN apt-get update >/dev/null && apt-get install -y --no-install-recommends iptables >/dev/null && rm -rf /var/lib/apt/lists/*\n' |
    docker build -q -t "$hgwimage" "${labels[@]}" - >/dev/null 2>>"$hout/build.log" || return 1
  [ -n "$compose" ] && return 0
  hgwnet="fdcliref-gw-$$-${RANDOM}"
  docker network create "${labels[@]}" "$hgwnet" >/dev/null || return 1
  hgw="$(docker run -d "${labels[@]}" --cap-add NET_ADMIN --network "$hgwnet" --network-alias main "$hgwimage" sleep infinity)"
}

# gw_policy MODE HOSTS: a phase's rules in the gateway: everything
# (public), loopback only (no-network), or loopback, the resolver and the
# addresses HOSTS resolve to now (allowlist; a *.domain resolves as its
# domain).
gw_policy() {
  local rules="iptables -F OUTPUT; iptables -P OUTPUT ACCEPT"
  case "$1" in
    no-network) rules="iptables -F OUTPUT; iptables -A OUTPUT -o lo -j ACCEPT; iptables -P OUTPUT DROP" ;;
    allowlist)
      rules='iptables -F OUTPUT; iptables -A OUTPUT -o lo -j ACCEPT; iptables -A OUTPUT -m state --state ESTABLISHED,RELATED -j ACCEPT
for ns in $(awk "/^nameserver/ {print \$2}" /etc/resolv.conf); do iptables -A OUTPUT -d "$ns" -j ACCEPT; done
for h in '"$2"'; do
  case "$h" in
    *[!0-9./]*) for ip in $(getent ahostsv4 "${h#\*.}" | awk "{print \$1}" | sort -u); do iptables -A OUTPUT -d "$ip" -j ACCEPT; done ;;
    *) iptables -A OUTPUT -d "$h" -j ACCEPT ;;
  esac
done
iptables -P OUTPUT DROP' ;;
  esac
  docker exec -u root "$hgw" sh -c "$rules"
}

harbor_cleanup() {
  if [ -n "${hvcid:-}" ]; then
    docker rm -f "$hvcid" >/dev/null 2>&1 || true
  fi
  if [ -n "${hvimages:-}" ] && [ -z "${CLIREF_KEEP_IMAGE:-}" ]; then
    local vi
    for vi in $hvimages; do docker rmi -f "$vi" >/dev/null 2>&1 || true; done
  fi
  if [ -n "${hproj:-}" ]; then
    docker exec -u root "$hcid" chown -R "$(id -u):$(id -g)" /logs/agent /logs/verifier /logs/artifacts >/dev/null 2>&1 || true
    "${hcompose[@]}" down -v --rmi local --remove-orphans >/dev/null 2>&1 || true
    hcid=""
  fi
  if [ -n "${hcid:-}" ]; then
    docker exec -u root "$hcid" chown -R "$(id -u):$(id -g)" /logs/agent /logs/verifier /logs/artifacts >/dev/null 2>&1 || true
    docker rm -f "$hcid" >/dev/null 2>&1 || true
  fi
  if [ -n "${hbuilt:-}" ] && [ -z "${CLIREF_KEEP_IMAGE:-}" ]; then
    docker rmi -f "$himage" >/dev/null 2>&1 || true
  fi
  if [ -n "${hgw:-}" ] && [ -z "${hproj:-}" ]; then
    docker rm -f "$hgw" >/dev/null 2>&1 || true
  fi
  if [ -n "${hgwnet:-}" ]; then
    docker network rm "$hgwnet" >/dev/null 2>&1 || true
  fi
  if [ -n "${hgwimage:-}" ] && [ -z "${CLIREF_KEEP_IMAGE:-}" ]; then
    docker rmi -f "$hgwimage" >/dev/null 2>&1 || true
  fi
  if [ -n "${CLIREF_LOGS:-}" ] && [ -d "${hout:-}" ]; then
    mkdir -p "$CLIREF_LOGS"
    cp -a "$hout/logs/." "$CLIREF_LOGS/" 2>/dev/null || true
    [ -f "$hout/build.log" ] && cp "$hout/build.log" "$CLIREF_LOGS/" 2>/dev/null || true
    [ -d "$hout/steps" ] && cp -a "$hout/steps" "$CLIREF_LOGS/" 2>/dev/null || true
  fi
  [ -n "${hout:-}" ] && rm -rf "$hout"
}

if [ "${1:-}" = "--harbor" ]; then
  shift
  harbor_trial "$@"
  exit 0
fi

two=1
if [ "${1:-}" = "--one-container" ]; then
  two=""
  shift
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 [--one-container] TASK_DIR [RUN_ID]" >&2
  exit 2
fi
task="$(cd "$1" && pwd)"
run="${2:-cliref-$$}"
name="$(basename "$task" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9._\n-' '-')"
tag="flightdeck-cliref/${name}:${run}"
labels=(--label flightdeck.managed=true --label "flightdeck.run=${run}" --label flightdeck.kind=cliref)
workdir=/app # the task image's WORKDIR

out="$(mktemp -d "${TMPDIR:-/tmp}/flightdeck-cliref.XXXXXX")"
cid=""
cleanup() {
  if [ -n "$cid" ]; then docker rm -f "$cid" >/dev/null 2>&1 || true; fi
  rm -rf "$out"
}
trap cleanup EXIT

start() {
  docker run -d --network none --init "${labels[@]}" --entrypoint sleep "$tag" infinity
}

grade() {
  docker cp "$task/tests" "$cid:/flightdeck-tests"
  docker exec -e FLIGHTDECK_REWARD_DIR=/flightdeck-reward -e FLIGHTDECK_WORKDIR="$workdir" -w /flightdeck-tests "$cid" \
    bash -c 'mkdir -p "$FLIGHTDECK_REWARD_DIR" && bash ./test.sh' >"$out/grader.log" 2>&1
  mkdir -p "$out/reward"
  docker cp "$cid:/flightdeck-reward/." "$out/reward/"
  docker rm -f "$cid" >/dev/null
  cid=""
}

if ! docker build -q -t "$tag" "${labels[@]}" "$task/environment" >/dev/null 2>"$out/build.log"; then
  cat "$out/build.log" >&2
  exit 1
fi

if [ -n "$two" ]; then
  cid="$(start)"
  docker cp "$task/instruction.md" "$cid:/tmp/instruction.md"
  docker exec -w "$workdir" "$cid" bash -c true
  mkdir -p "$out/work"
  docker cp "$cid:$workdir/." "$out/work/"
  docker rm -f "$cid" >/dev/null
  cid="$(start)"
  docker cp "$out/work/." "$cid:$workdir"
  grade
else
  cid="$(start)"
  grade
fi

if [ -f "$out/reward/reward.json" ]; then
  cat "$out/reward/reward.json"
elif [ -f "$out/reward/reward.txt" ]; then
  cat "$out/reward/reward.txt"
else
  echo "cli-reference: the grader wrote no reward; its output:" >&2
  cat "$out/grader.log" >&2
  exit 1
fi
