# The binding to lexbor, the HTML parser inside selectolax's compiled module, for the walk over a page's
# DOM (udfs/extract/_page_walk.pyx): the structs it reads and the functions it calls, which ``load``
# (udfs/extract/_lexbor.pyx) looks up in that module with ``dlsym`` (no headers needed, nothing compiled
# at run time).
#
# The structs mirror lexbor 2.x's node, element, attribute and character data as selectolax 1.0 bundles
# it (in C every field up to the last one read, to Cython only the fields read); ``load`` parses a known
# page through them and refuses to run if what it reads is not that page (tests/test_page_walk.py also
# checks every character read against selectolax's API). They and the function table are declared here
# rather than in the .pyx so that a module cimporting them reads fields and calls functions with no call
# into this module in between.
from libc.stdint cimport uintptr_t

cdef extern from *:
    """
    typedef struct cm_str { unsigned char *data; size_t length; } cm_str_t;
    typedef struct cm_node {
        void *events; uintptr_t local_name; uintptr_t prefix; uintptr_t ns; void *owner_document;
        struct cm_node *next; struct cm_node *prev; struct cm_node *parent;
        struct cm_node *first_child; struct cm_node *last_child; void *user; int type;
    } cm_node_t;
    typedef struct { cm_node_t node; cm_str_t data; } cm_chardata_t;
    typedef struct cm_attr {
        cm_node_t node; uintptr_t upper_name; uintptr_t qualified_name; cm_str_t *value; void *owner;
        struct cm_attr *next; struct cm_attr *prev;
    } cm_attr_t;
    typedef struct {
        cm_node_t node; uintptr_t upper_name; uintptr_t qualified_name; cm_str_t *is_value;
        cm_attr_t *first_attr; cm_attr_t *last_attr; cm_attr_t *attr_id; cm_attr_t *attr_class; int custom_state;
    } cm_element_t;
    typedef void *(*cm_create_f)(void);
    typedef unsigned int (*cm_parse_f)(void *, const unsigned char *, size_t);
    typedef void *(*cm_destroy_f)(void *);
    typedef void *(*cm_body_f)(void *);
    typedef const unsigned char *(*cm_name_f)(void *, size_t *);
    typedef void *(*cm_create_element_f)(void *, const unsigned char *, size_t, void *);
    """
    ctypedef struct cm_str_t:
        unsigned char *data
        size_t length
    ctypedef struct cm_node_t:
        uintptr_t local_name
        cm_node_t *next
        cm_node_t *parent
        cm_node_t *first_child
        void *user
        int type
    ctypedef struct cm_chardata_t:
        cm_node_t node
        cm_str_t data
    ctypedef struct cm_attr_t:
        cm_node_t node
        cm_str_t *value
        cm_attr_t *next
    ctypedef struct cm_element_t:
        cm_node_t node
        cm_attr_t *first_attr
        cm_attr_t *attr_id
        cm_attr_t *attr_class
    ctypedef void *(*cm_create_f)() nogil
    ctypedef unsigned int (*cm_parse_f)(void *, const unsigned char *, size_t) nogil
    ctypedef void *(*cm_destroy_f)(void *) nogil
    ctypedef void *(*cm_body_f)(void *) nogil
    ctypedef const unsigned char *(*cm_name_f)(void *, size_t *) nogil
    ctypedef void *(*cm_create_element_f)(void *, const unsigned char *, size_t, void *) nogil

# cm_node_t.type of an element and of a text node.
cdef enum:
    NODE_ELEMENT = 1
    NODE_TEXT = 3

# lexbor's functions, as ``load`` finds them; a caller keeps its own copy, so that each call is one
# pointer read from its own module.
ctypedef struct Lexbor:
    cm_create_f create                  # lxb_html_document_create
    cm_parse_f parse                    # lxb_html_document_parse: 0 when parsed
    cm_destroy_f destroy                # lxb_html_document_destroy
    cm_body_f body                      # lxb_html_document_body_element_noi
    cm_name_f attr_name                 # lxb_dom_attr_local_name_noi
    cm_create_element_f create_element  # lxb_dom_document_create_element

cdef int load(str module_path, Lexbor *into) except -1
cdef dict tag_ids(const Lexbor *lexbor, names, uintptr_t limit)
