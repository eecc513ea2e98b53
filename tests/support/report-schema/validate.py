"""Validates report-v1 documents against docs/report-v1.schema.json (draft 2020-12).

usage: validate.py SCHEMA DUMP_DIR --expect cmd,cmd,... [GOLDEN ...]
"""
import argparse
import collections
import json
import pathlib
import sys

import jsonschema


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("schema")
    parser.add_argument("dump_dir")
    parser.add_argument("--expect", default="", help="commands of which at least one report must be seen")
    parser.add_argument("goldens", nargs="*")
    args = parser.parse_intermixed_args()

    schema = json.loads(pathlib.Path(args.schema).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    documents = sorted(pathlib.Path(args.dump_dir).glob("*.json")) if pathlib.Path(args.dump_dir).is_dir() else []
    documents += [pathlib.Path(g) for g in args.goldens]
    seen = collections.Counter()
    bad = 0
    for path in documents:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"{path}: not JSON ({e})")
            bad += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.absolute_path) or "(the document)"
            print(f"{path}: {where}: {error.message[:300]}")
        if errors:
            bad += 1
        if isinstance(doc, dict):
            seen[doc.get("command", "?")] += 1
    print(f"{len(documents)} report-v1 documents, {bad} invalid; by command: "
          + ", ".join(f"{c} {n}" for c, n in sorted(seen.items())))
    missing = [c for c in args.expect.split(",") if c and not seen[c]]
    if missing:
        print(f"no report of {', '.join(missing)} was seen: the tier that writes them wrote none")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
