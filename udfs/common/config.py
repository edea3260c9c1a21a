"""Config plumbing shared by every layer: YAML with ``include:``, validated into dataclasses.

This module imports nothing of the project, so the per-record modules (``udfs/``), the scoring
service and the loader can declare their config classes beside their logic without importing
``jobs``. A config file may name other files under ``include:`` (paths relative to it); they are
merged first, in order, and the file's own keys override them. An unknown key, a wrong type or a
missing path becomes a one-line ``ConfigError`` naming the key.
"""
from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, Optional

import yaml

# Beside the package in a clone or editable install; imported from a ``--py-files`` zip there is no
# folder beside it, so the driver uses the clone it is submitted from (its working directory).
CONF_DIR = next((d for d in (Path(__file__).resolve().parents[2] / "conf", Path.cwd() / "conf") if d.is_dir()),
                Path(__file__).resolve().parents[2] / "conf")


class ConfigError(ValueError):
    """A config problem, reported as one line naming the offending key."""


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _check_type(value: Any, tp: Any, key: str) -> Any:
    """Return ``value`` coerced to ``tp`` (int → float only) or raise ConfigError."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:  # Optional[X]; the config classes spell unions with typing, not ``X | Y``
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check_type(value, inner[0], key)
    if _is_dataclass_type(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__}")
        return build(tp, value, key)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {type(value).__name__}")
        return [_check_type(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__}")
        if args:
            return {k: _check_type(v, args[1], f"{key}.{k}") for k, v in value.items()}
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is Any:
        return value
    if tp in (int, float, str, bool) and (not isinstance(value, tp) or (tp is int and isinstance(value, bool))):
        raise ConfigError(f"{key}: expected {tp.__name__}, got {type(value).__name__} {value!r}")
    return value


def build(cls: type, data: dict, prefix: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``, rejecting unknown keys and wrong types."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            where = f"{prefix}.{key}" if prefix else key
            raise ConfigError(f"{where}: unknown key (allowed: {', '.join(sorted(known))})")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            where = f"{prefix}.{f.name}" if prefix else f.name
            values[f.name] = _check_type(data[f.name], hints[f.name], where)
    obj = cls(**values)
    validate = getattr(obj, "validate", None)
    if validate:
        validate(prefix)
    return obj


def require_file(path: Optional[str], key: str) -> None:
    """Raise a ConfigError when a configured local file does not exist."""
    if path and "://" not in path and not Path(path).exists():
        raise ConfigError(f"{key}: file not found: {path}")


def deep_merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_yaml(path: Path) -> dict:
    """Read a YAML file and its ``include:`` chain into one merged dict."""
    if not path.exists():
        raise ConfigError(f"config: file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"config: {path}{where}: not valid YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config: {path}: top level must be a mapping")
    includes = data.pop("include", []) or []
    if isinstance(includes, str):
        includes = [includes]
    merged: dict = {}
    for inc in includes:
        merged = deep_merge(merged, read_yaml((path.parent / inc).resolve()))
    return deep_merge(merged, data)


def shipped_section(section: str) -> dict:
    """Section ``section`` of the shipped ``conf/<section>.yaml`` (for defaults that are data, not code)."""
    return read_yaml(CONF_DIR / f"{section}.yaml").get(section, {})
