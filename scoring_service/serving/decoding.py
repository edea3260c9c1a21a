"""Request bodies to encoded texts, checked against the limits before anything large is built: JSON
``{"texts": [...]}`` and Arrow IPC streams of texts (for ``/v1/score``, hashed by the server
afterwards), and Arrow streams of texts the client hashed itself (for ``/v1/score/encoded``, checked
against the model's hashing spec and embedding tables). Refusals: 400 for a malformed body, 413 past
a size or count limit, 409 for another hashing spec, 415 for compressed Arrow and other content types.
"""
from __future__ import annotations

import json
import struct
from typing import Callable, Dict, List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scoring_service.model.features import COUNT_BITS, LAYOUT_FEATURES, Bags, HashingSpec
from scoring_service.serving.config import ServerConfig
from scoring_service.serving.errors import RequestError

ARROW_STREAM = "application/vnd.apache.arrow.stream"
ENCODED_COLUMNS = ("content", "content_classes", "lines", "layout")
HASHING_KEY = b"hashing"  # Arrow schema metadata of an encoded body: HashingSpec.digest


def _arrow_batch_is_compressed(metadata: pa.Buffer) -> bool:
    """Whether a record-batch message declares compressed buffers: field ``compression`` of the
    ``RecordBatch`` table (Arrow's Message.fbs), read from the flatbuffer without touching the body.
    pyarrow has verified the flatbuffer when it read the message."""
    buf = memoryview(metadata)

    def field(table: int, index: int) -> int:  # absolute position of a table's field, 0 when absent
        vtable = table - struct.unpack_from("<i", buf, table)[0]
        slot = 4 + 2 * index
        if slot + 2 > struct.unpack_from("<H", buf, vtable)[0]:
            return 0
        offset = struct.unpack_from("<H", buf, vtable + slot)[0]
        return table + offset if offset else 0

    message = struct.unpack_from("<I", buf, 0)[0]
    header = field(message, 2)  # Message.header; slot 1 is the union's type tag
    header += struct.unpack_from("<I", buf, header)[0]
    return field(header, 3) != 0  # RecordBatch.compression


def arrow_columns(body: bytes, wanted: Dict[str, Callable[[pa.DataType], bool]],
                  shape: str) -> Tuple[pa.Schema, Dict[str, pa.ChunkedArray]]:
    """The ``wanted`` columns (name → accepted type) of an uncompressed Arrow IPC stream, checked
    before anything is decoded; ``shape`` says what the body must hold when they are missing.

    Compressed streams are refused: Arrow's reader allocates each buffer's declared uncompressed size
    before a caller can look, so a 33 KB zstd body can ask for gigabytes. Uncompressed, every buffer
    lies inside the body (read zero-copy), so ``max_request_bytes`` bounds what decoding holds.
    """
    try:
        messages = pa.ipc.MessageReader.open_stream(pa.py_buffer(body))
        schema = pa.ipc.read_schema(messages.read_next_message())
        indices = {name: schema.get_field_index(name) for name in wanted}
        if any(index < 0 or not wanted[name](schema.field(index).type) for name, index in indices.items()):
            raise RequestError(400, f"Arrow body needs {shape}")
        chunks: Dict[str, list] = {name: [] for name in wanted}
        for message in messages:
            if message.type != "record batch":
                raise RequestError(400, f"unexpected Arrow IPC message: {message.type}")
            if _arrow_batch_is_compressed(message.metadata):
                raise RequestError(415, "compressed Arrow IPC streams are not accepted; send it uncompressed")
            batch = pa.ipc.read_record_batch(message, schema)
            batch.validate(full=True)  # offsets within the body, valid UTF-8
            for name, index in indices.items():
                chunks[name].append(batch.column(index))
        return schema, {name: pa.chunked_array(chunks[name], schema.field(indices[name]).type) for name in wanted}
    except (pa.ArrowInvalid, OSError, struct.error) as exc:
        raise RequestError(400, f"malformed Arrow stream: {exc}") from None


def texts_from_arrow(body: bytes) -> pa.ChunkedArray:
    """The ``text`` column of an Arrow body."""
    def is_string(kind):
        return pa.types.is_string(kind) or pa.types.is_large_string(kind)

    return arrow_columns(body, {"text": is_string}, "a string column 'text'")[1]["text"]


def bags_from_arrow(body: bytes, config: ServerConfig, spec: HashingSpec) -> Bags:
    """Encoded texts (``/v1/score/encoded``): list<int32> columns ``content``, ``lines`` and
    ``layout`` and the content's count classes, list<uint8> ``content_classes`` (``features.Bags``),
    hashed as the model hashes (schema metadata ``hashing`` = ``HashingSpec.digest``).

    Each text's bags are no longer than the model's hashing can make them, every id lies within its
    embedding table and every class below ``COUNT_BITS``, so the forward pass never reads outside a
    table and a batch's size stays bounded.
    """
    def list_of(value_type):
        return lambda kind: pa.types.is_list(kind) and kind.value_type == value_type

    wanted = {name: list_of(pa.uint8() if name == "content_classes" else pa.int32()) for name in ENCODED_COLUMNS}
    schema, columns = arrow_columns(body, wanted, "list<int32> columns 'content', 'lines', 'layout' and a "
                                                  "list<uint8> column 'content_classes'")
    given = (schema.metadata or {}).get(HASHING_KEY, b"").decode("latin-1")
    if not given:
        raise RequestError(400, f"Arrow schema metadata {HASHING_KEY.decode()!r} missing: the digest of the "
                                "hashing spec the texts were encoded with (GET /v1/model)")
    if given != spec.digest:
        raise RequestError(409, f"texts encoded with hashing {given!r}, the model hashes with {spec.digest!r}: "
                                "re-read GET /v1/model and encode again")
    check_text_count(len(columns["layout"]), config)
    parts = []
    for name, most, vocab in (("content", spec.max_content_ids, spec.buckets),
                              ("content_classes", spec.max_content_ids, COUNT_BITS),
                              ("lines", spec.max_line_ids, spec.layout_vocab),
                              ("layout", LAYOUT_FEATURES, spec.layout_vocab)):
        column = columns[name].combine_chunks()
        ids = column.flatten()
        if column.null_count or ids.null_count:
            raise RequestError(400, f"{name}: null rows or ids")
        lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
        wrong = np.flatnonzero(lengths != most) if name == "layout" else np.flatnonzero(lengths > most)
        if len(wrong):
            row = int(wrong[0])
            raise RequestError(400 if name == "layout" else 413,
                               f"{name}[{row}] has {lengths[row]} ids; the model's hashing gives "
                               f"{'exactly' if name == 'layout' else 'at most'} {most}")
        ids = ids.to_numpy()
        if len(ids) and (ids.min() < 0 or ids.max() >= vocab):
            raise RequestError(400, f"{name}: ids must lie in [0, {vocab}), got {ids.min()}..{ids.max()}")
        parts.append((ids, np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))))
    (content, content_offsets), (classes, classes_offsets), (lines, lines_offsets), (layout, _) = parts
    if not np.array_equal(content_offsets, classes_offsets):
        raise RequestError(400, "content_classes: one class per content id")
    return Bags(content, classes, content_offsets, lines, lines_offsets, layout.reshape(-1, LAYOUT_FEATURES))


JSON_CONTAINERS = 64  # arrays and objects a JSON body may hold: {"texts": [...]} and some room


def json_structure(body: bytes, chunk: int = 1 << 22) -> Tuple[int, int]:
    """(arrays and objects, commas) of a JSON text, outside its strings: a pass of numpy over the
    bytes (a regular expression takes seconds on 64 MB). Escaped backslashes and quotes go first, so
    that every quote left opens or closes a string."""
    data = np.frombuffer(body.replace(b"\\\\", b"").replace(b'\\"', b""), dtype=np.uint8)
    containers = commas = 0
    in_string = 0  # at the start of the chunk
    for start in range(0, len(data), chunk):
        part = data[start:start + chunk]
        quotes = part == ord('"')
        # uint8 running counts wrap at 256, which keeps their parity: odd = inside a string
        outside = ((np.cumsum(quotes.view(np.uint8), dtype=np.uint8) + in_string) & 1) == 0
        containers += int(np.count_nonzero(outside & ((part == ord("[")) | (part == ord("{")))))
        commas += int(np.count_nonzero(outside & (part == ord(","))))
        in_string = (in_string + int(np.count_nonzero(quotes))) & 1
    return containers, commas


def texts_from_json(body: bytes, config: ServerConfig) -> list:
    # json.loads builds every value before the body's shape can be checked, and a value can cost
    # twenty times its bytes ("[]," becomes a 56-byte list; nesting ends in RecursionError): count
    # the arrays, objects and values outside strings first, on the body without its strings.
    containers, commas = json_structure(body)
    if containers > JSON_CONTAINERS:
        raise RequestError(400, f"malformed JSON: {containers} arrays and objects; the body must be "
                                '{"texts": [string, ...]}')
    if commas + 1 > config.max_request_texts + JSON_CONTAINERS:
        raise RequestError(413, f"{commas + 1} JSON values exceed the limit of {config.max_request_texts} texts")
    try:
        payload = json.loads(body)
    except ValueError as exc:  # JSON and UTF-8 errors
        raise RequestError(400, f"malformed JSON: {exc}") from None
    texts = payload.get("texts") if isinstance(payload, dict) else None
    if not isinstance(texts, list):
        raise RequestError(400, 'JSON body must be {"texts": [string, ...]}')
    return texts


def decode_texts(body: bytes, content_type: str, config: ServerConfig, text_chars_used: int) -> List[str]:
    """A request body's texts, checked against the limits and cut to what the model reads."""
    if content_type == ARROW_STREAM:
        column = texts_from_arrow(body)
        check_text_count(len(column), config)
        lengths = pc.binary_length(column)
        longest = (pc.max(lengths).as_py() or 0) if len(column) else 0
        if longest > config.max_text_bytes:
            where = pc.index(lengths, longest).as_py()
            raise RequestError(413, f"texts[{where}] exceeds the limit of {config.max_text_bytes} bytes per text")
        texts = column.to_pylist()
    elif content_type == "application/json":
        texts = texts_from_json(body, config)
        check_text_count(len(texts), config)
        for i, text in enumerate(texts):
            if text is not None and not isinstance(text, str):
                raise RequestError(400, f"texts[{i}] is {type(text).__name__}, expected a string")
            # UTF-8 is at most 4 bytes per character: count bytes only when it could matter. A JSON
            # "\ud800" is a lone surrogate: counted, not refused, as the model reads it as "?".
            if text and len(text) * 4 > config.max_text_bytes and \
                    len(text.encode("utf-8", "surrogatepass")) > config.max_text_bytes:
                raise RequestError(413, f"texts[{i}] exceeds the limit of {config.max_text_bytes} bytes per text")
    else:
        raise RequestError(415, f"unsupported Content-Type {content_type!r} (use application/json or {ARROW_STREAM})")
    # The model reads no more of a text than this (features.normalize): queue no more.
    return ["" if t is None else t[:text_chars_used] for t in texts]


def check_text_count(count: int, config: ServerConfig) -> None:
    if count > config.max_request_texts:
        raise RequestError(413, f"{count} texts in one request exceed the limit of {config.max_request_texts}")
