#!/usr/bin/env python3
"""word_stats: a toolgate protocol tool written in Python.

`word_stats.py description` prints the tool's name, description and input schema as JSON.
`word_stats.py run` reads the input as JSON on stdin and prints the result as JSON.
"""
import collections
import json
import re
import sys

DESCRIPTION = {
    "name": "word_stats",
    "description": "Counts the words, lines and characters of a text and lists its most frequent words.",
    "input_schema": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The text to analyse"},
            "top": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "description": "How many frequent words to list (default 5)",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
}


def run(args):
    text = args["text"]
    words = re.findall(r"[\w']+", text.lower())
    top = collections.Counter(words).most_common(args.get("top", 5))
    return {
        "words": len(words),
        "lines": len(text.splitlines()),
        "characters": len(text),
        "top_words": [{"word": word, "count": count} for word, count in top],
    }


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "description":
        json.dump(DESCRIPTION, sys.stdout)
        return 0
    if command == "run":
        # The input was validated against input_schema before this process started.
        json.dump(run(json.load(sys.stdin)), sys.stdout)
        return 0
    print(f"usage: {sys.argv[0]} description|run", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
