"""A tiny text toolkit with two bugs for the agent to fix."""
import re


def slugify(title):
    """'Hello, World!' -> 'hello-world'."""
    words = re.findall(r"[a-z0-9]+", title)
    return "-".join(words)


def word_count(text):
    """The number of whitespace-separated words."""
    return len(text.split(" ")) - 1
