"""
Tool: slugify
Description: Turns a title into a URL slug (lower case, words joined by a separator).
Input:
  title (string): The title to turn into a slug
  separator (string, optional): What joins the words (default "-")
Output: {"slug": "<the slug>"}
"""
# A Forge docstring tool: toolgate builds the input schema from the header above, runs the
# script with python3 and passes the input as JSON on stdin. It need not be executable.
import json
import re
import sys

args = json.load(sys.stdin)
separator = args.get("separator", "-")
words = re.findall(r"[a-z0-9]+", args["title"].lower())
print(json.dumps({"slug": separator.join(words)}))
