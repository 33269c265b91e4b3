from .._noop import Noop


class Resource(Noop):
    @classmethod
    def create(cls, *args, **kwargs):
        return cls()
