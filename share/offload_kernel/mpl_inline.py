"""Inline matplotlib backend: figures become PNG display_data in the notebook.

Selected with MPLBACKEND=module://offload_kernel.mpl_inline (install() sets
that default).  pyplot needs a module with `FigureCanvas` and `show`;
`FigureManager` is there for older matplotlib versions.  Figures are drawn
by Agg, sent when the user calls plt.show() or, for figures still open when
a cell ends, by offload_kernel.post_execute().
"""

import base64
import io

import _offload_kernel
from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def show(block=None):
    """Send every open figure as a PNG, then close it.  `block` is ignored:
    nothing here waits for a window."""
    for manager in Gcf.get_all_fig_managers():
        try:
            _publish(manager.canvas.figure)
        finally:
            # Closed even when drawing fails, so a broken figure does not
            # come back with an error after every later cell.
            Gcf.destroy(manager)


def _publish(figure):
    data = {'text/plain': repr(figure)}
    metadata = {}
    # As IPython: an empty figure is only its text, not a blank image.
    if figure.axes or figure.lines:
        buffer = io.BytesIO()
        figure.canvas.print_figure(buffer, format='png', bbox_inches='tight')
        png = buffer.getvalue()
        # The PNG's own size (IHDR chunk), since 'tight' crops the figure.
        width, height = int.from_bytes(png[16:20], 'big'), int.from_bytes(png[20:24], 'big')
        data['image/png'] = base64.b64encode(png).decode('ascii')
        metadata['image/png'] = {'width': width, 'height': height}
    _offload_kernel.publish(data, metadata, None, False)
