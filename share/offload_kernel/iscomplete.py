"""is_complete_request, following IPython's rules (TransformerManager.check_complete).

Consoles ask this after each Enter to choose between running the cell and a
continuation prompt, so the answers match IPython's: an indented block runs
once the cell ends with a newline (the Enter on the empty line after it), a
`%%` cell magic once its last line is blank.
"""

# Lines the kernel rewrites before compiling: `%magic`, `!cmd`, `x = %magic`,
# `x = !cmd`, `obj?`, `obj??` (but not a comment that ends with '?').
_IPYTHON_LINE = r'\s*(?:[\w.]+\s*=\s*)?[%!]|\s*[^#\s].*\?\s*$'


def is_complete(code):
    """Return an is_complete_reply content dict for code."""
    import io
    import re
    import tokenize
    lines = code.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return {'status': 'complete'}
    # As in IPython, the first line's indentation is not part of the code.
    first_indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    lines = [line[len(first_indent):] if line.startswith(first_indent) else line
             for line in lines]
    if lines[-1].endswith('\\'):
        return _incomplete(lines[-1])
    if lines[0].startswith('%%'):
        return _incomplete(lines[-1]) if lines[-1].strip() else {'status': 'complete'}
    # A `pass` at the same indentation has the same effect on completeness.
    source = ''.join(line[:len(line) - len(line.lstrip())] + 'pass\n'
                     if re.match(_IPYTHON_LINE, line) else line + '\n'
                     for line in lines)
    try:
        tokens = [token for token in tokenize.generate_tokens(io.StringIO(source).readline)
                  if token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT)]
    except tokenize.TokenError:
        # Input ends inside brackets or a string, or closes a bracket it never
        # opened (tokenize cannot tell these apart; the compiler can).
        return {'status': 'invalid'} if _codeop_status(source) == 'invalid' \
            else _incomplete(lines[-1])
    except SyntaxError:  # a dedent that matches no outer block
        return {'status': 'invalid'}
    # tokenize closes blocks still open at the end with DEDENT tokens.
    ends_in_block = len(tokens) > 1 and tokens[-2].type == tokenize.DEDENT
    last_token = next((token for token in reversed(tokens)
                       if token.type not in (tokenize.DEDENT, tokenize.ENDMARKER)), None)
    if last_token is not None and last_token.string == ':':  # `if x:`, `def f():`...
        return _incomplete(last_token.line, deeper=True)
    status = _codeop_status(source)
    if status == 'complete' and ends_in_block \
            and not code.rstrip(' \t\r\f\v').endswith('\n'):
        status = 'incomplete'  # an indented block waits for one more Enter
    return _incomplete(lines[-1]) if status == 'incomplete' else {'status': status}


def _codeop_status(source):
    import ast
    import codeop
    import warnings
    compiler = codeop.CommandCompiler()
    # Top-level await, `async for` and `async with` are valid in a cell.
    compiler.compiler.flags |= ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # SyntaxWarnings show when the cell runs
        try:
            return 'complete' if compiler(source, '<cell>', 'exec') else 'incomplete'
        except (SyntaxError, OverflowError, ValueError):
            return 'invalid'


def _incomplete(line, deeper=False):
    """Indent the next line like `line`, or a level (4 spaces) deeper."""
    line = line.expandtabs(4)
    indent = len(line) - len(line.lstrip()) + (4 if deeper else 0)
    return {'status': 'incomplete', 'indent': ' ' * indent}
