import unittest

from textkit import word_count


class WordCountTest(unittest.TestCase):
    def test_counts_words(self):
        self.assertEqual(word_count("one two three"), 3)

    def test_collapses_spaces(self):
        self.assertEqual(word_count("  one   two "), 2)
