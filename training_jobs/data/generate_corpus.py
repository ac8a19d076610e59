#!/usr/bin/env python3
"""Writes corpus.txt: English-like prose from a small grammar, for the byte-level trainer.

The text is generated (nothing is copied from anywhere), deterministic for a seed, and small
enough to ship in the repository and embed in the binary. Regenerate with:
    python3 training_jobs/data/generate_corpus.py > training_jobs/data/corpus.txt
"""
import random
import sys

SEED = 2024
TARGET_BYTES = 200_000

NAMES = ["Ada", "Brian", "Chen", "Dana", "Emil", "Farah", "Grace", "Hugo", "Ines", "Jonas",
         "Kira", "Luis", "Maya", "Nils", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tara"]
PLACES = ["the harbour", "the old mill", "the library", "the market", "the station",
          "the valley", "the workshop", "the northern ridge", "the river bank", "the archive",
          "the small cafe", "the machine room", "the orchard", "the lighthouse", "the campus"]
NOUNS = ["cluster", "river", "lantern", "garden", "engine", "letter", "bridge", "window",
         "notebook", "signal", "queue", "harvest", "compass", "ledger", "kettle", "storm",
         "lesson", "schedule", "model", "checkpoint", "map", "song", "machine", "question"]
ADJS = ["quiet", "bright", "patient", "heavy", "curious", "narrow", "ancient", "careful",
        "steady", "restless", "golden", "distant", "simple", "crowded", "gentle", "stubborn"]
VERBS_T = ["repaired", "carried", "watched", "measured", "opened", "painted", "followed",
           "questioned", "rebuilt", "counted", "studied", "described", "borrowed", "tested"]
VERBS_I = ["waited", "laughed", "listened", "wandered", "hesitated", "worked", "slept",
           "returned", "argued", "paused", "smiled", "began again"]
ADVS = ["slowly", "quietly", "at once", "again", "without a word", "before dawn",
        "after supper", "all afternoon", "with great care", "in silence", "once more"]
TIMES = ["In the morning", "Later that week", "By evening", "Long before the rain",
         "On the third day", "When the bell rang", "After a while", "At midnight",
         "Early in spring", "Every Tuesday"]
CONNECT = ["because", "although", "while", "until", "so that", "and then", "but"]
THOUGHTS = ["nothing lasts unless someone keeps it", "a long task is many short ones",
            "the queue is shorter than it looks", "every map leaves something out",
            "patience is a kind of speed", "the river never asks for permission",
            "a checkpoint is a promise to the future", "small steps still arrive"]


def noun_phrase(r):
    article = r.choice(["the", "a", "an old", "her", "his", "their", "every"])
    words = f"{r.choice(ADJS)} {r.choice(NOUNS)}" if r.random() < 0.5 else r.choice(NOUNS)
    if article == "a" and words[0] in "aeiou":
        article = "an"
    return f"{article} {words}"


def clause(r):
    who = r.choice(NAMES)
    kind = r.random()
    if kind < 0.4:
        return f"{who} {r.choice(VERBS_T)} {noun_phrase(r)} {r.choice(ADVS)}"
    if kind < 0.7:
        return f"{who} {r.choice(VERBS_I)} near {r.choice(PLACES)}"
    if kind < 0.85:
        return f"{who} said that {r.choice(THOUGHTS)}"
    return f"{noun_phrase(r)} was {r.choice(ADJS)} and {r.choice(ADJS)}"


def sentence(r):
    s = clause(r)
    if r.random() < 0.35:
        s = f"{s} {r.choice(CONNECT)} {clause(r)}"
    if r.random() < 0.3:
        s = f"{r.choice(TIMES)}, {s[0].lower() + s[1:] if s[0] in 'aht' else s}"
    s = s[0].upper() + s[1:]
    end = "." if r.random() < 0.85 else r.choice(["!", "?", "..."])
    if r.random() < 0.12:
        return f'"{s}{end}" {r.choice(NAMES)} asked.' if end == "?" else f'"{s}{end}"'
    return s + end


def main():
    r = random.Random(SEED)
    out, size, chapter = [], 0, 1
    while size < TARGET_BYTES:
        if r.random() < 0.04:
            block = f"Chapter {chapter}\n"
            chapter += 1
        else:
            block = " ".join(sentence(r) for _ in range(r.randint(2, 7))) + "\n"
        out.append(block + "\n")
        size += len(block) + 1
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
