"""complete_request: jedi when it is installed, else a plain name lookup.

Matches always replace code[cursor_start:cursor_end], where the range is the
word being typed: the last identifier of a dotted name (so `os.pa` gives
`path`, `pardir`, ... starting at `pa`) or a whole `%magic` token.  This is
what IPython does with jedi, and the fallback follows the same rule.
"""

import builtins

from .inspector import resolve


def complete(code, cursor_pos, namespace, magic_names):
    """Return a complete_reply content dict for the cursor (code points)."""
    cursor_pos = max(0, min(cursor_pos, len(code)))
    word = _word_before(code, cursor_pos)
    start = cursor_pos - len(word)
    percents = start - len(code[:start].rstrip('%'))
    if percents:
        matches = _magic_matches(code, start, percents, word, magic_names)
        if matches is not None:
            return _reply(matches, start - percents, cursor_pos)
    try:
        import jedi
        return _jedi_complete(jedi, code, cursor_pos, namespace)
    except Exception:  # no jedi, or one of its internal errors on odd input
        return _reply(_plain_matches(code, start, word, namespace), start, cursor_pos)


def _reply(matches, cursor_start, cursor_end):
    return {'matches': sorted(set(matches), key=_sort_key), 'cursor_start': cursor_start,
            'cursor_end': cursor_end, 'metadata': {}}


def _sort_key(match):
    # As IPython: keyword arguments (`sep=`) first, then public names,
    # then _private, then __dunder__ ones.
    rank = -1 if match.endswith('=') else match.startswith('_') + match.startswith('__')
    return rank, match


def _word_before(code, pos):
    """The identifier characters immediately before pos."""
    start = pos
    while start > 0 and (code[start - 1].isalnum() or code[start - 1] == '_'):
        start -= 1
    return code[start:pos]


def _magic_matches(code, start, percents, word, magic_names):
    """Magic names for a `%word` / `%%word` token, or None if it is not one.

    A `%` after an operand is the modulo operator; a cell magic only counts
    at the very start of the cell.
    """
    prefix_start = start - percents
    if percents > 2 or (prefix_start > 0 and not code[prefix_start - 1].isspace()):
        return None
    if percents == 2 and code[:prefix_start].strip():
        return []
    return ['%' * percents + name for name in magic_names if name.startswith(word)]


def _jedi_complete(jedi, code, cursor_pos, namespace):
    line = code.count('\n', 0, cursor_pos) + 1
    column = cursor_pos - (code.rfind('\n', 0, cursor_pos) + 1)
    completions = jedi.Interpreter(code, [namespace]).complete(line, column)
    if not completions:
        return _reply([], cursor_pos, cursor_pos)
    # jedi's `complete` is the part still to type, so the rest was typed.
    # Should completions disagree on where the word starts, widen them all
    # to the earliest start, as IPython does.
    starts = [cursor_pos - len(c.name_with_symbols) + len(c.complete) for c in completions]
    start = min(starts)
    matches = [code[start:s] + c.name_with_symbols for s, c in zip(starts, completions)]
    return _reply(matches, start, cursor_pos)


def _plain_matches(code, start, word, namespace):
    """Names of the namespace, builtins and keywords, or attributes after a dot."""
    if start > 0 and code[start - 1] == '.':
        dotted = code[:start - 1]
        head = len(dotted)
        while head > 0 and (dotted[head - 1].isalnum() or dotted[head - 1] in '_.'):
            head -= 1
        found, obj = resolve(dotted[head:], namespace)
        if not found:
            return []
        try:
            names = dir(obj)
        except Exception:
            return []
        if not word.startswith('_'):
            names = [n for n in names if not n.startswith('_')]  # as IPython
    else:
        import keyword
        names = list(namespace) + dir(builtins) + keyword.kwlist
    return [n for n in names if n.startswith(word)]
