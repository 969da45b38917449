# Validation of the configuration and of the dataset registry against their JSON schemas
# (workflow/schemas/), with a one-line message that names the key and the problem (Snakemake's own
# `validate` prints the whole schema). Included first: every other rule file reads a checked config.

import os

import jsonschema
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate


def check_schema(data, schema_file, what):
    """Validate `data` against `schema_file` (relative to the Snakefile's folder), then fill in the
    schema's defaults (snakemake.utils.validate). A violation raises a one-line WorkflowError."""
    path = os.path.join(workflow.basedir, schema_file)
    with open(path) as fh:
        schema = yaml.safe_load(fh)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        raise WorkflowError(f"{what}: {schema_problem(error)}")
    validate(data, path)


def schema_problem(error):
    """'key.path: what is wrong' for one jsonschema error, on one line."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    where = f"{where}: " if where else ""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        return f"{where}unknown key {unknown[0]!r} (known keys here: {', '.join(known)})"
    message = " ".join(error.message.split())
    return where + (message if len(message) <= 200 else message[:197] + "...")
