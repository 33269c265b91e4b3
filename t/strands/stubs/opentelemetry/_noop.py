"""Objects that accept any call and record nothing."""


class Noop:
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _noop_method

    def __call__(self, *args, **kwargs):
        return Noop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def is_recording(self):
        return False


def _noop_method(*args, **kwargs):
    return Noop()
