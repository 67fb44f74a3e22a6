"""inspect_request and `obj?` / `obj??` help, in IPython's layout.

Names are resolved by dictionary lookup and getattr only: inspecting must not
run the user's code beyond what attribute access and repr() do.
"""

import builtins
import os

# IPython shortens long string forms at detail level 0 the same way.
_STRING_MAX = 200


def resolve(dotted, namespace):
    """Look up 'a.b.c' in namespace, then builtins; return (found, object)."""
    parts = dotted.split('.')
    if not all(part.isidentifier() for part in parts):
        return False, None
    if parts[0] in namespace:
        obj = namespace[parts[0]]
    elif hasattr(builtins, parts[0]):
        obj = getattr(builtins, parts[0])
    else:
        return False, None
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except Exception:  # properties may raise anything
            return False, None
    return True, obj


def inspect(code, cursor_pos, detail_level, namespace):
    """Return an inspect_reply content dict for the name at the cursor."""
    name = name_at_cursor(code, max(0, min(cursor_pos, len(code))))
    text = help_text(name, detail_level, namespace) if name else None
    if text is None:
        return {'found': False, 'data': {}, 'metadata': {}}
    return {'found': True, 'data': {'text/plain': text}, 'metadata': {}}


def help_text(expr, detail_level, namespace):
    """The pager text for `expr?` (detail 0) or `expr??` (1); None if not found."""
    name = expr.strip().strip('?').strip()  # tolerate `?obj` and `obj??` forms
    found, obj = resolve(name, namespace)
    return _format(name, obj, detail_level) if found else None


def name_at_cursor(code, cursor_pos):
    """The dotted name to inspect: the one the cursor is in or just after,
    else the function whose call's parentheses hold the cursor, else the last
    name before the cursor.  None if there is none."""
    import io
    import tokenize
    line_starts = [0]  # tokenize's rows are '\n'-separated, as readline splits
    for line in code.split('\n'):
        line_starts.append(line_starts[-1] + len(line) + 1)
    dotted, last, calls = [], None, []  # calls: name before each open '('
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            start = line_starts[tok.start[0] - 1] + tok.start[1]
            end = line_starts[tok.end[0] - 1] + tok.end[1]
            # As IPython: a token starting at the cursor is after it, except
            # at the start of a line ('|foo' inspects foo).
            if start > cursor_pos or (start == cursor_pos and tok.start[1] > 0):
                break
            if tok.type == tokenize.NAME:
                # After a '.', extend the dotted name; otherwise start anew.
                dotted = dotted + [tok.string] if dotted and dotted[-1] == '.' else [tok.string]
                last = ''.join(dotted)
                if end >= cursor_pos:
                    return last
            elif tok.string == '.' and dotted and dotted[-1] != '.':
                dotted.append('.')
            else:
                if tok.string in ('(', '[', '{'):
                    calls.append(last if tok.string == '(' and dotted else None)
                elif tok.string in (')', ']', '}') and calls:
                    calls.pop()
                if tok.type not in (tokenize.NL, tokenize.COMMENT):
                    dotted = []
    except (tokenize.TokenError, SyntaxError):
        pass  # unfinished code, e.g. an open call: what was read is enough
    open_calls = [name for name in calls if name]
    return open_calls[-1] if open_calls else last


def _format(name, obj, detail_level):
    """IPython's pinfo layout, as plain text."""
    import inspect as pyinspect
    is_class = pyinspect.isclass(obj)
    function_like = is_class or pyinspect.isroutine(obj)
    fields = []
    if callable(obj):
        label = 'Init signature' if is_class else 'Signature' if function_like else 'Call signature'
        try:
            fields.append((label, name + str(pyinspect.signature(obj))))
        except Exception:  # many builtins have none (ValueError)
            pass
    source = None
    if detail_level > 0:
        try:
            source = pyinspect.getsource(obj)
        except Exception:  # TypeError for builtins/instances, OSError if no file
            pass
    body = [('Source', source.rstrip('\n')) if source else
            ('Docstring', pyinspect.getdoc(obj) or '<no docstring>')]
    filename = _file_of(pyinspect, obj)
    file_field = [('File', filename)] if filename else []
    type_field = [('Type', type(obj).__name__)]
    # IPython's two orders: one for functions and classes, one for other objects.
    if function_like:
        fields += body + file_field + type_field
    else:
        string_form = [('String form', _string_form(obj, detail_level))]
        fields += type_field + string_form + file_field + body
    width = max(len(title) for title, _ in fields) + 2
    return '\n'.join(title + ':\n' + value if '\n' in value else
                     (title + ':').ljust(width) + value
                     for title, value in fields)


def _string_form(obj, detail_level):
    try:
        text = str(obj)
    except Exception as exc:
        return '<str() failed: %r>' % exc
    if detail_level == 0 and len(text) > _STRING_MAX:
        half = _STRING_MAX // 2
        text = text[:half] + ' <...> ' + text[-half:]
    return text


def _file_of(pyinspect, obj):
    """The source file defining obj (or its class), when it exists on disk."""
    target = obj if (pyinspect.ismodule(obj) or pyinspect.isclass(obj)
                     or pyinspect.isroutine(obj)) else type(obj)
    try:
        filename = pyinspect.getabsfile(pyinspect.unwrap(target))
    except Exception:  # TypeError for builtins, ValueError from unwrap cycles
        return None
    return filename if os.path.isfile(filename) else None
