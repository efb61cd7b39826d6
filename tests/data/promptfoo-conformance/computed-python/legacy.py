import json
import sys

context = json.loads(sys.argv[1])
print("Legacy prompt on " + context["vars"]["topic"] + ": {{fact}}")
