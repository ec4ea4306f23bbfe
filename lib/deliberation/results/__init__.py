"""Reading what runs produced: the raw replies behind the rows (``replies``) and the headline
numbers of several profiles side by side (``compare``)."""
