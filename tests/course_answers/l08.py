RIGHT = {"l8.q1": "fusion", "l8.q2": 32, "l8.q3": 69632, "l8.q4": 5.0}
WRONG = {"l8.q1": ["algsimp", "fusion-wrapper", "fusoin", 3],
         "l8.q2": [16, 0, 100, "many"],
         "l8.q3": [32768, 16384, "a lot"],
         "l8.q4": [0.2, 74, 1, "five"]}
CLOSE = {"l8.q1": ["fusion,algsimp"], "l8.q2": [16, 0], "l8.q3": [32768], "l8.q4": [0.2, 74]}
