#!/usr/bin/env python3
"""Runs a composite GitHub Action's steps as the runner does, for the cli tier's tests of action.yml.

  run_action.py ACTION_YML WORKSPACE RESULT_JSON [NAME=VALUE ...]

Inputs are NAME=VALUE (defaults from action.yml); each `run:` step runs as GitHub runs a bash step
(bash --noprofile --norc -eo pipefail FILE, in WORKSPACE) with its `env:` evaluated, GITHUB_ACTION_PATH
(the action's directory), GITHUB_WORKSPACE, a fresh GITHUB_OUTPUT file per step and one
GITHUB_STEP_SUMMARY file; `if:` conditions are evaluated over inputs and earlier steps' outputs;
a `uses:` step cannot run offline, so it is recorded with its evaluated `with:`. The first failing
step (without continue-on-error) ends the run, as on GitHub. RESULT_JSON gets the steps, the action's
outputs and its exit code; the steps' stdout goes to stdout.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expr, inputs, steps):
    """The expression forms action.yml uses: inputs.X, steps.ID.outputs.X, 'literals', == != && || !."""
    tokens = re.findall(r"'(?:[^']|'')*'|&&|\|\||==|!=|!|\(|\)|[A-Za-z_][A-Za-z0-9_.-]*", expr)
    if "".join(tokens).replace(" ", "") != expr.replace(" ", ""):
        raise ValueError(f"unsupported expression: {expr}")
    python = []
    for token in tokens:
        if token.startswith("'"):
            python.append(repr(token[1:-1].replace("''", "'")))
        elif token in ("&&", "||", "!"):
            python.append({"&&": " and ", "||": " or ", "!": " not "}[token])
        elif token in ("==", "!=", "(", ")"):
            python.append(token)
        elif token.startswith("inputs."):
            python.append(repr(inputs.get(token[len("inputs."):], "")))
        elif token.startswith("steps."):
            _, step, kind, name = token.split(".", 3)
            if kind != "outputs":
                raise ValueError(f"unsupported expression: {token}")
            python.append(repr(steps.get(step, {}).get(name, "")))
        elif token in ("true", "false"):
            python.append(str(token == "true"))
        else:
            raise ValueError(f"unsupported expression: {token}")
    return eval("".join(python), {"__builtins__": {}})  # noqa: S307: tokens checked above


def substitute(text, inputs, steps):
    return EXPRESSION.sub(lambda m: str(evaluate(m.group(1), inputs, steps)), str(text))


def read_outputs(path):
    """name=value lines, and name<<DELIMITER blocks, as the runner reads GITHUB_OUTPUT."""
    outputs = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            i += 1
            while lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            outputs[name] = "\n".join(value)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs


def main():
    action_yml, workspace, result_json = sys.argv[1:4]
    with open(action_yml, encoding="utf-8") as f:
        action = yaml.safe_load(f)
    inputs = {name: str(spec.get("default", "")) for name, spec in action.get("inputs", {}).items()}
    for pair in sys.argv[4:]:
        name, value = pair.split("=", 1)
        if name not in inputs:
            sys.exit(f"run_action.py: the action has no input {name}")
        inputs[name] = value
    assert action["runs"]["using"] == "composite"
    action_path = os.path.dirname(os.path.abspath(action_yml))
    tmp = tempfile.mkdtemp(prefix="run-action-")
    summary = os.path.join(tmp, "step_summary.md")
    open(summary, "w").close()
    steps, record, exit_code = {}, [], 0
    for index, step in enumerate(action["runs"]["steps"]):
        entry = {"index": index, "id": step.get("id", "")}
        condition = step.get("if")
        if condition is not None:
            condition = EXPRESSION.sub(lambda m: m.group(1), str(condition))
            if not evaluate(condition, inputs, steps):
                entry["skipped"] = True
                record.append(entry)
                continue
        if "uses" in step:
            entry["uses"] = step["uses"]
            entry["with"] = {k: substitute(v, inputs, steps) for k, v in step.get("with", {}).items()}
            record.append(entry)
            continue
        assert step.get("shell") == "bash", "the action's run steps are bash steps"
        output = os.path.join(tmp, f"output_{index}")
        open(output, "w").close()
        env = dict(os.environ)
        env.update({k: substitute(v, inputs, steps) for k, v in step.get("env", {}).items()})
        env.update({"GITHUB_ACTION_PATH": action_path, "GITHUB_WORKSPACE": workspace, "GITHUB_OUTPUT": output,
                    "GITHUB_STEP_SUMMARY": summary, "GITHUB_ACTIONS": "true", "CI": "true"})
        script = os.path.join(tmp, f"step_{index}.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(substitute(step["run"], inputs, steps))
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script], cwd=workspace, env=env,
                              stdout=subprocess.PIPE, text=True, check=False)
        sys.stdout.write(done.stdout)
        entry.update({"exit_code": done.returncode, "stdout": done.stdout, "outputs": read_outputs(output)})
        if entry["id"]:
            steps[entry["id"]] = entry["outputs"]
        record.append(entry)
        if done.returncode != 0 and not step.get("continue-on-error", False):
            exit_code = done.returncode
            break
    outputs = {name: substitute(spec.get("value", ""), inputs, steps)
               for name, spec in action.get("outputs", {}).items()}
    with open(summary, encoding="utf-8") as f:
        summary_text = f.read()
    with open(result_json, "w", encoding="utf-8") as f:
        json.dump({"exit_code": exit_code, "steps": record, "outputs": outputs, "step_summary": summary_text}, f,
                  indent=2)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
