"""Config plumbing shared by every layer: YAML with ``include:``, validated into dataclasses.

This module imports nothing of the project, so the per-record modules (``udfs/``), the scoring
service and the loader can declare their config classes beside their logic without importing
``jobs``. A config file may name other files under ``include:`` (paths relative to it); they are
merged first, in order, and the file's own keys override them. An unknown key, a wrong type or a
missing path becomes a one-line ``ConfigError`` naming the key. The config classes of shipped
sections take their defaults from the shipped YAML in ``conf/`` (``defaults_from_yaml``).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
import typing
from pathlib import Path
from typing import Any, Callable, Optional

import yaml

# Beside the package in a clone or editable install; imported from a ``--py-files`` zip there is no
# folder beside it, so the driver uses the clone it is submitted from (its working directory).
CONF_DIR = next((d for d in (Path(__file__).resolve().parents[1] / "conf", Path.cwd() / "conf") if d.is_dir()),
                Path(__file__).resolve().parents[1] / "conf")
# The embedded default run config; it also holds the shipped defaults of the sections that are not a
# stage's (spark, io, lease).
LOCAL_CONFIG = CONF_DIR / "local.yaml"
# libyaml's parser where PyYAML has it: the same documents, parsed several times faster (each Python
# worker reads the shipped defaults when it imports the config classes).
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(ValueError):
    """A config problem, reported as one line naming the offending key."""


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _check_type(value: Any, tp: Any, key: str) -> Any:
    """Return ``value`` coerced to ``tp`` (int → float only) or raise ConfigError."""
    if isinstance(value, float) and not math.isfinite(value):  # YAML's .nan and .inf: no setting means them
        raise ConfigError(f"{key}: must be a finite number, got {value!r}")
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


# Once per class: a config holds hundreds of the same small sections (a threshold per rule and language),
# and every Python worker builds the shipped defaults when it imports the config classes.
_type_hints = functools.lru_cache(maxsize=None)(typing.get_type_hints)


def build(cls: type, data: dict, prefix: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``, rejecting unknown keys and wrong types."""
    hints = _type_hints(cls)
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


def read_yaml(path: Path, including: typing.Tuple[Path, ...] = ()) -> dict:
    """Read a YAML file and its ``include:`` chain into one merged dict. ``including``: the files
    whose includes led here, to name a cycle instead of recursing forever."""
    if path.resolve() in (p.resolve() for p in including):
        raise ConfigError(f"config: include cycle: {' -> '.join(str(p) for p in (*including, path))}")
    if not path.exists():
        raise ConfigError(f"config: file not found: {path}")
    if path.is_dir():
        raise ConfigError(f"config: {path}: is a folder; include and --config name YAML files")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config: {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"config: {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = yaml.load(text, Loader=YAML_LOADER) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"config: {path}{where}: not valid YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config: {path}: top level must be a mapping")
    includes = data.pop("include", []) or []
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(inc, str) for inc in includes):
        raise ConfigError(f"config: {path}: include: must be a file path or a list of them, got {includes!r}")
    merged: dict = {}
    for inc in includes:
        merged = deep_merge(merged, read_yaml((path.parent / inc).resolve(), (*including, path)))
    return deep_merge(merged, data)


def shipped_file(section: str) -> Path:
    """The shipped file that holds section ``section``: a stage's own ``conf/<section>.yaml``, else
    ``conf/local.yaml``."""
    own = CONF_DIR / f"{section}.yaml"
    return own if own.exists() else LOCAL_CONFIG


@functools.lru_cache(maxsize=None)
def _shipped_yaml(file: Path) -> dict:
    """A shipped file as ``read_yaml`` reads it, parsed once per process: the config classes of one
    stage all take their defaults from the same file (the filter's includes its per-language preset).
    Read only: ``defaults_from_yaml`` copies what it takes."""
    return read_yaml(file)


def defaults_from_yaml(section: str, *path: str) -> Callable[[type], type]:
    """Class decorator, beneath ``@dataclass``: every annotated field of the class gets its default
    from the shipped YAML's ``section`` (``path``: keys of a mapping inside it), so that a default
    is written once, in the file that documents it to users. A field the YAML lacks, a key that is
    no field, or a field that already has a default in Python is an error at import.
    Only for shipped sections: a config class without a file in ``conf/`` keeps plain defaults."""
    file = shipped_file(section)
    where = ".".join((section, *path))

    def give_defaults(cls: type) -> type:
        if dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__}: @defaults_from_yaml goes beneath @dataclass, not above it")
        names = list(cls.__dict__.get("__annotations__", {}))
        written = [name for name in names if name in cls.__dict__]
        if written:
            raise TypeError(f"{cls.__name__}.{written[0]}: has a default in Python; its default is "
                            f"{where}.{written[0]} in {file.name}")
        shipped = _shipped_yaml(file).get(section)
        for key in path:
            shipped = shipped.get(key) if isinstance(shipped, dict) else None
        if not isinstance(shipped, dict):
            raise ConfigError(f"{file.name}: {where}: missing or not a mapping; it holds the defaults of "
                              f"{cls.__name__}")
        for name in names:
            if name not in shipped:
                raise ConfigError(f"{file.name}: {where}.{name}: missing; it is the default of "
                                  f"{cls.__name__}.{name}")
        for key in shipped:
            if key not in names:
                raise ConfigError(f"{file.name}: {where}.{key}: {cls.__name__} has no field {key} "
                                  f"(fields: {', '.join(names)})")
        hints = _type_hints(cls)
        for name in names:
            value = _check_type(shipped[name], hints[name], f"{where}.{name}")
            if value is None or isinstance(value, (str, int, float, bool)):
                setattr(cls, name, dataclasses.field(default=value))
            else:  # lists, mappings, config sections: a copy per instance, so that none share them
                setattr(cls, name, dataclasses.field(default_factory=functools.partial(copy.deepcopy, value)))
        return cls

    return give_defaults
