"""The standard jupyter_kernel_test suite, with every sample set so that no test skips."""

from __future__ import annotations

import jupyter_kernel_test as jkt

from kernel_testlib import KERNEL_NAME


class OffloadKernelTests(jkt.KernelTests):
    kernel_name = KERNEL_NAME

    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('to stderr', file=sys.stderr)"

    completion_samples = [
        {"text": "pri", "matches": {"print"}},
        {"text": "%lsm", "matches": {"%lsmagic"}},
        {"text": "import o"},  # any matches; the reply must still be well formed
    ]

    complete_code_samples = [
        "1",
        "print('hello, world')",
        "def f(x):\n  return x*2\n\n\n",
        "x = [1,\n 2]",
        "%lsmagic",
    ]
    incomplete_code_samples = [
        "print('''hello",
        "def f(x):\n  x*2",
        "for i in range(3):",
        "x = [1,",
    ]
    invalid_code_samples = ["import = 7q", "1 +* 2", ")"]

    code_page_something = "print?"
    code_generate_error = "raise ValueError('offload test error')"

    # code_history_pattern must match exactly one of these codes (and nothing
    # else this kernel runs): "1+2+3" is the only one of the form 1?2*.
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
        {"code": "'ab' * 2", "result": "'abab'"},
        {"code": "{'k': None}", "result": "{'k': None}"},
        {
            "code": "class HtmlThing:\n    def _repr_html_(self):\n        return '<b>thing</b>'\nHtmlThing()",
            "mime": "text/html",
            "result": "<b>thing</b>",
        },
        {
            "code": "class MdThing:\n    def _repr_markdown_(self):\n        return '*md*'\nMdThing()",
            "mime": "text/markdown",
            "result": "*md*",
        },
    ]

    code_display_data = [
        {"code": "from IPython.display import HTML, display\ndisplay(HTML('<b>test</b>'))", "mime": "text/html"},
        {"code": "from IPython.display import Markdown, display\ndisplay(Markdown('*md*'))", "mime": "text/markdown"},
        {"code": "from IPython.display import Math, display\ndisplay(Math(r'\\frac{1}{2}'))", "mime": "text/latex"},
        # our builtin display(), no import
        {"code": "display('plain display')", "mime": "text/plain"},
        {
            "code": "class SvgThing:\n    def _repr_svg_(self):\n        return '<svg xmlns=\"http://www.w3.org/2000/svg\"/>'\ndisplay(SvgThing())",
            "mime": "image/svg+xml",
        },
        {"code": "display({'a': 1}, display_id='offload-jkt-display')", "mime": "text/plain"},
        {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])", "mime": "image/png"},
    ]

    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "print"
    code_clear_output = "from IPython.display import clear_output\nprint('soon gone')\nclear_output()"


class OffloadIopubWelcomeTests(jkt.IopubWelcomeTests):
    kernel_name = KERNEL_NAME
    support_iopub_welcome = True
