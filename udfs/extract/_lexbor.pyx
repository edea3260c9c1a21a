# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The binding to lexbor inside selectolax's compiled module (declarations: _lexbor.pxd): its
functions looked up with ``dlsym``, the struct layout checked on a probe page, tag ids by name."""
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport UINTPTR_MAX


cdef extern from "dlfcn.h" nogil:
    void *dlopen(const char *filename, int flag)
    void *dlsym(void *handle, const char *symbol)
    char *dlerror()
    int RTLD_NOW
    int RTLD_LOCAL


cdef void *_symbol(void *handle, const char *name) except NULL:
    cdef void *found = dlsym(handle, name)
    if found == NULL:
        raise ImportError(f"selectolax's lexbor has no {name.decode()}: selectolax 1.0.x is needed")
    return found


cdef int load(str module_path, Lexbor *into) except -1:
    """Fill ``into`` with lexbor's functions from selectolax's compiled module (already imported by the
    caller), then check the structs' layout."""
    cdef bytes path = module_path.encode()
    cdef void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)
    if handle == NULL:
        raise ImportError(f"cannot open {module_path}: {dlerror().decode()}")
    into.create = <cm_create_f>_symbol(handle, b"lxb_html_document_create")
    into.parse = <cm_parse_f>_symbol(handle, b"lxb_html_document_parse")
    into.destroy = <cm_destroy_f>_symbol(handle, b"lxb_html_document_destroy")
    into.body = <cm_body_f>_symbol(handle, b"lxb_html_document_body_element_noi")
    into.attr_name = <cm_name_f>_symbol(handle, b"lxb_dom_attr_local_name_noi")
    into.create_element = <cm_create_element_f>_symbol(handle, b"lxb_dom_document_create_element")
    _check_layout(into)
    return 0


cdef dict tag_ids(const Lexbor *lexbor, names, uintptr_t limit):
    """Each of ``names``' lexbor tag id (lexbor's ids of HTML tags are fixed numbers, asked of it by
    name); each must be below ``limit``, the size of the caller's table by id."""
    cdef dict ids = {}
    cdef str name
    cdef bytes encoded
    cdef cm_node_t *element
    cdef void *document = lexbor.create()
    if document == NULL:
        raise MemoryError()
    try:
        for name in names:
            encoded = name.encode()
            element = <cm_node_t *>lexbor.create_element(document, <const unsigned char *>PyBytes_AS_STRING(encoded),
                                                         len(encoded), NULL)
            if element == NULL or element.local_name == 0 or element.local_name >= limit:
                raise ImportError(f"lexbor gave <{name}> no small tag id: an unknown lexbor version")
            ids[name] = element.local_name
    finally:
        lexbor.destroy(document)
    return ids


cdef void _check_layout(const Lexbor *lexbor) except *:
    """Parse a known page and read it through the structs of _lexbor.pxd; refuse to run on a lexbor
    whose layout differs (selectolax's pin keeps it from happening)."""
    cdef bytes probe = b'<html><body><p class="probe-class" id="probe-id" role="main">probe text</p></body></html>'
    cdef uintptr_t tag_p = tag_ids(lexbor, ("p",), UINTPTR_MAX)["p"]
    cdef void *document = lexbor.create()
    cdef cm_node_t *body
    cdef cm_node_t *paragraph
    cdef cm_element_t *element
    cdef cm_chardata_t *text
    cdef size_t length
    cdef const unsigned char *name
    if document == NULL:
        raise MemoryError()
    try:
        if lexbor.parse(document, <const unsigned char *>PyBytes_AS_STRING(probe), len(probe)) != 0:
            raise ImportError("lexbor could not parse the layout probe")
        body = <cm_node_t *>lexbor.body(document)
        paragraph = body.first_child if body != NULL else NULL
        if paragraph == NULL or paragraph.type != NODE_ELEMENT or paragraph.parent != body \
                or paragraph.local_name != tag_p or paragraph.next != NULL:
            raise ImportError("lexbor's node struct is not laid out as udfs/extract/_lexbor.pxd declares it")
        element = <cm_element_t *>paragraph
        name = lexbor.attr_name(element.first_attr, &length) if element.first_attr != NULL else NULL
        if element.attr_class == NULL or element.attr_id == NULL or name == NULL or name[:length] != b"class" \
                or element.attr_class.value.data[:element.attr_class.value.length] != b"probe-class" \
                or element.attr_id.value.data[:element.attr_id.value.length] != b"probe-id":
            raise ImportError("lexbor's element or attribute struct is not laid out as udfs/extract/_lexbor.pxd "
                              "declares it")
        text = <cm_chardata_t *>paragraph.first_child
        if text == NULL or text.node.type != NODE_TEXT or text.data.data[:text.data.length] != b"probe text":
            raise ImportError("lexbor's text struct is not laid out as udfs/extract/_lexbor.pxd declares it")
    finally:
        lexbor.destroy(document)
