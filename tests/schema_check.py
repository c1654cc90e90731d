"""A small JSON Schema checker for the subset our OpenAPI document uses."""

from __future__ import annotations

TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool,
    "integer": int, "number": (int, float), "null": type(None),
}


def errors(value, schema: dict, components: dict, where: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty when it fits)."""
    if "$ref" in schema:
        return errors(value, components[schema["$ref"].rsplit("/", 1)[-1]], components, where)
    found = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, name) for name in names):
            return [f"{where}: {type(value).__name__} is not {'/'.join(names)}"]
    if "const" in schema and value != schema["const"]:
        found.append(f"{where}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if "anyOf" in schema and all(errors(value, s, components, where) for s in schema["anyOf"]):
        found.append(f"{where}: matches none of anyOf")
    if "oneOf" in schema and sum(not errors(value, s, components, where) for s in schema["oneOf"]) != 1:
        found.append(f"{where}: does not match exactly one of oneOf")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{where}: missing {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                found += errors(value[key], sub, components, f"{where}.{key}")
        if schema.get("additionalProperties") is False:
            found += [f"{where}: unlisted {key!r}" for key in value if key not in schema.get("properties", {})]
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += errors(item, schema["items"], components, f"{where}[{index}]")
    return found


def _is(value, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, TYPES[name])
