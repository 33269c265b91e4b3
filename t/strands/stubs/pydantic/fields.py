class FieldInfo:
    def __init__(self, default=..., description=None):
        self.default = default
        self.description = description
