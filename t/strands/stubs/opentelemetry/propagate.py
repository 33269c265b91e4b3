from ._noop import Noop

_textmap = Noop()


def extract(carrier, context=None, **kwargs):
    return {}


def inject(carrier, context=None, **kwargs):
    pass


def get_global_textmap():
    return _textmap


def set_global_textmap(textmap):
    global _textmap
    _textmap = textmap
