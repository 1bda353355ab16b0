#!/usr/bin/python
# -*- coding: utf-8 -*-
# rig.smartnic.rig: run rig (rig up, rig check; rig plan in check mode) and
# map its JSON report to Ansible's result.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rig
short_description: Provision a SmartNIC host with rig and report what changed
description:
  - Runs C(rig up) (or C(rig check)) with C(-o json) on the host and maps rig's
    report (schema C(rig.report/v1), or C(rig.check/v2) for C(rig check)) to
    the task's result.
  - In check mode it runs C(rig plan) instead, which changes nothing;
    C(changed) then says whether C(rig up) would change something.
  - C(changed) is true when a step applied changes (status C(changed), or
    C(pending-reboot) with changes, or a step that failed after applying some).
  - rig's exit 3 (a power cycle or reboot is needed for pending changes) is not
    a failure; the result and the fact C(rig_power_cycle_required) say so.
  - rig's exit 1 fails the task with the failed step's error, likely cause and
    fix; exit 4 (a check below a threshold) fails it with the check's figures;
    exit 5 (a measurement that cannot be right) fails it with the reason.
  - rig is run with an argument list, never through a shell.
version_added: "0.1.0"
author: rig developers
options:
  command:
    description:
      - C(up) checks, applies and re-checks the playbook's steps; C(check) runs
        only its C(check:) section (the throughput check).
    type: str
    choices: [up, check]
    default: up
  playbook:
    description:
      - The rig playbook, an embedded name (C(bf2-dpu), C(rig playbooks) lists
        them) or a path on the host.
    type: str
    required: true
  rig_path:
    description: The rig binary on the host (a name is looked up on C(PATH)).
    type: str
    default: rig
  only:
    description: Run only these steps (C(--only)).
    type: list
    elements: str
    default: []
  skip:
    description: Skip these steps (C(--skip)).
    type: list
    elements: str
    default: []
  rundir:
    description: A private OvS instance directory (C(--rundir)).
    type: path
  db:
    description: The ovsdb remote (C(--db)), e.g. C(unix:/run/openvswitch/db.sock).
    type: str
  metrics_file:
    description:
      - Write the check's figures there in the Prometheus text format for
        node_exporter's textfile collector (C(--metrics-file)); the
        directory must exist. Not used in check mode.
    type: path
  lock_file:
    description: rig's host-wide lock (C(--lock-file)); default rig's own.
    type: path
  lock_timeout:
    description: How long to wait for another rig apply (C(--lock-timeout)), e.g. C(60s).
    type: str
notes:
  - Needs root on the host (C(become)) except in check mode.
  - rig's exit codes - 0 ok, 1 failure, 2 usage, 3 power cycle or reboot
    required, 4 check below threshold, 5 invalid measurement.
"""

EXAMPLES = r"""
- name: Bring the BlueField up
  rig.smartnic.rig:
    playbook: bf2-dpu
    rig_path: /usr/local/sbin/rig
    skip: [check]
  register: up

- name: Throughput check, figures for node_exporter
  rig.smartnic.rig:
    command: check
    playbook: bf2-dpu
    metrics_file: /var/lib/prometheus/node-exporter/rig.prom
"""

RETURN = r"""
rc:
  description: rig's exit code.
  returned: always
  type: int
cmd:
  description: The argument list rig ran with.
  returned: always
  type: list
  elements: str
report:
  description: rig's JSON report as it printed it (rig.report/v1 or rig.check/v2).
  returned: when rig printed one
  type: dict
changed_steps:
  description: The steps that changed something (would change, in check mode).
  returned: always
  type: list
  elements: str
power_cycle_required:
  description: rig exited 3, pending changes need a power cycle or reboot.
  returned: always
  type: bool
pending:
  description: The steps waiting for a power cycle, and for what.
  returned: always
  type: list
  elements: dict
check:
  description:
    - The check's figures, when a check ran - pass, bridge, topology, ports,
      and per frame size mpps, gbps, loss_pct, pass, invalid and the
      thresholds (name, limit, measured, pass).
  returned: when a check result is in the report
  type: dict
cause:
  description: The likely cause rig gave for a failure.
  returned: on failure, when rig names one
  type: str
fix:
  description: The fix rig gave for a failure.
  returned: on failure, when rig names one
  type: str
ansible_facts:
  description: C(rig_power_cycle_required), as power_cycle_required.
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_POWER_CYCLE = 3
EXIT_BELOW_THRESHOLD = 4
EXIT_INVALID = 5

# failed-step phases in which the step's changes were (at least partly) made
APPLIED_PHASES = ("apply", "verify", "measure")


def build_argv(rig, p, check_mode):
    """rig's argument list for the module's parameters."""
    argv = [rig, "-o", "json"]
    if check_mode:
        argv.append("plan")
        if p["command"] == "check":
            argv += ["--only", "check"]
    else:
        argv.append(p["command"])
    argv += ["-p", p["playbook"]]
    if p["command"] == "up":
        for name in p["only"]:
            argv += ["--only", name]
        for name in p["skip"]:
            argv += ["--skip", name]
    if p["rundir"]:
        argv += ["--rundir", p["rundir"]]
    if p["db"]:
        argv += ["--db", p["db"]]
    if not check_mode:
        if p["metrics_file"]:
            argv += ["--metrics-file", p["metrics_file"]]
        if p["lock_file"]:
            argv += ["--lock-file", p["lock_file"]]
        if p["lock_timeout"]:
            argv += ["--lock-timeout", p["lock_timeout"]]
    return argv


def check_figures(res):
    """The check's figures from a CheckResult (rig.check/v1 and v2 fields)."""
    if not isinstance(res, dict) or "runs" not in res:
        return None
    runs = []
    for r in res.get("runs") or []:
        runs.append({
            "frame_size": r.get("frameSize"),
            "mpps": r.get("rxMpps"),
            "gbps": r.get("rxGbps"),
            "loss_pct": r.get("lossPct"),
            "line_rate_pct": r.get("lineRatePct"),
            "pass": bool(r.get("pass")),
            "invalid": r.get("invalid", ""),
            "thresholds": [
                {"name": t.get("name"), "limit": t.get("limit"), "measured": t.get("measured"), "pass": bool(t.get("pass"))}
                for t in r.get("thresholds") or []
            ],
        })
    return {
        "pass": bool(res.get("pass")),
        "bridge": res.get("bridge"),
        "topology": res.get("topology"),
        "ingress_port": res.get("ingressPort"),
        "egress_port": res.get("egressPort"),
        "runs": runs,
    }


def step_changed(st, plan):
    """Whether one step of rig.report/v1 changed (or would change) the host."""
    status = st.get("status")
    if plan:
        return status == "would-change"
    if status == "changed":
        return True
    if status == "pending-reboot":
        return bool(st.get("changes"))
    return status == "failed" and st.get("phase") in APPLIED_PHASES and bool(st.get("changes"))


def from_report(rep, plan):
    """changed steps, pending steps, the check's figures and the failed
    step of a rig.report/v1 document."""
    steps = rep.get("steps") or []
    changed = [s.get("name") for s in steps if step_changed(s, plan)]
    pending = [{"step": s.get("name"), "pending": s.get("pending")} for s in steps if s.get("pending")]
    check, failed = None, None
    for s in steps:
        if s.get("name") == "check" and s.get("result") is not None:
            check = check_figures(s["result"])
        if s.get("status") == "failed" and failed is None:
            failed = s
    return changed, pending, check, failed


def from_check(doc):
    """The same from a rig.check/v2 document (rig check -o json): its
    cleanup of a killed check's leftovers is its only change."""
    changed = ["check"] if doc.get("cleanup") else []
    failed = None
    if doc.get("error"):
        failed = {"name": "check", "error": doc.get("error"), "cause": doc.get("cause"), "fix": doc.get("fix")}
    return changed, [], check_figures(doc), failed


def below_threshold_msg(check):
    """The thresholds a check did not meet, and what each run measured."""
    below, figures = [], []
    for r in (check or {}).get("runs", []):
        for t in r["thresholds"]:
            if not t["pass"]:
                below.append("%s %s: measured %.4g (%s B)" % (t["name"], t["limit"], t["measured"], r["frame_size"]))
        figures.append("%s B: %.3f Mpps, %.3f Gbps, loss %.4f%%" % (r["frame_size"], r["mpps"] or 0, r["gbps"] or 0, r["loss_pct"] or 0))
    return "%s (%s)" % ("; ".join(below) or "no threshold named", "; ".join(figures) or "no run")


def result_for(rc, doc, plan, what):
    """The module's result (without cmd, rc, stderr) for rig's exit code
    and JSON document."""
    if doc.get("schemaVersion", "").startswith("rig.check/"):
        changed, pending, check, failed = from_check(doc)
    else:
        changed, pending, check, failed = from_report(doc, plan)
    res = {
        "changed": bool(changed),
        "changed_steps": changed,
        "pending": pending,
        "power_cycle_required": rc == EXIT_POWER_CYCLE,
        "report": doc,
        "ansible_facts": {"rig_power_cycle_required": rc == EXIT_POWER_CYCLE},
    }
    if check is not None:
        res["check"] = check
    if rc in (EXIT_OK, EXIT_POWER_CYCLE):
        res["msg"] = "%s: %d step(s) %s%s" % (what, len(changed), "would change" if plan else "changed",
                                              "; power cycle required: " + ", ".join("%s (%s)" % (p["step"], p["pending"]) for p in pending) if rc == EXIT_POWER_CYCLE else "")
        return res
    res["failed"] = True
    if failed:
        res["cause"], res["fix"] = failed.get("cause") or "", failed.get("fix") or ""
    if rc == EXIT_BELOW_THRESHOLD:
        res["msg"] = "%s: check below threshold: %s" % (what, below_threshold_msg(check))
    elif failed:
        res["msg"] = "%s: step %s failed%s: %s" % (what, failed.get("name"), " (" + failed["phase"] + ")" if failed.get("phase") else "", failed.get("error"))
    else:
        res["msg"] = "%s: exit %d" % (what, rc)
    if res.get("fix"):
        res["msg"] += "; fix: " + res["fix"]
    return res


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type="str", choices=["up", "check"], default="up"),
            playbook=dict(type="str", required=True),
            rig_path=dict(type="str", default="rig"),
            only=dict(type="list", elements="str", default=[]),
            skip=dict(type="list", elements="str", default=[]),
            rundir=dict(type="path"),
            db=dict(type="str"),
            metrics_file=dict(type="path"),
            lock_file=dict(type="path"),
            lock_timeout=dict(type="str"),
        ),
        mutually_exclusive=[("only", "skip")],
        supports_check_mode=True,
    )
    p = module.params
    rig = p["rig_path"]
    if module.check_mode and "/" in rig and not os.path.exists(rig):
        # check mode on a host rig is not copied to yet (the copy task only
        # said it would copy): nothing to plan with; a real run installs it
        module.exit_json(changed=True, changed_steps=[], pending=[], power_cycle_required=False, cmd=[],
                         ansible_facts={"rig_power_cycle_required": False},
                         msg="%s is not on the host yet: a real run copies it and runs rig up" % rig)
    if "/" not in rig:
        rig = module.get_bin_path(rig, required=True)
    argv = build_argv(rig, p, module.check_mode)
    what = "rig " + ("plan" if module.check_mode else p["command"]) + " -p " + p["playbook"]
    rc, out, err = module.run_command(argv, check_rc=False)
    base = {"cmd": argv, "rc": rc, "stderr": err, "changed": False, "changed_steps": [], "pending": [],
            "power_cycle_required": False, "ansible_facts": {"rig_power_cycle_required": False}}
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError as e:
        doc = None
        base["stdout"] = out
        if rc in (EXIT_OK, EXIT_POWER_CYCLE):
            module.fail_json(msg="%s: exit %d but its output is not JSON (%s)" % (what, rc, e), **base)
    if not isinstance(doc, dict):
        usage = " (usage: a bad flag, playbook or step name)" if rc == EXIT_USAGE else ""
        module.fail_json(msg="%s: exit %d%s: %s" % (what, rc, usage, err.strip() or "no output"), **base)
    base.update(result_for(rc, doc, module.check_mode, what))
    if base.get("failed"):
        base.pop("failed")
        module.fail_json(**base)
    # failed=False said outright: Ansible takes a result with rc != 0 and no
    # "failed" key for a failure, and exit 3 is none
    module.exit_json(failed=False, **base)


if __name__ == "__main__":
    main()
