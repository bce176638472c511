RIGHT = {"l5.q1": "down", "l5.q2": ["transpose_all_users_slice"], "l5.q3": 114688, "l5.q4": "the same"}
WRONG = {"l5.q1": ["up", "sideways", 3], "l5.q2": ["slice_transpose", "transpose_all_user_slice", 7],
         "l5.q3": [1000, "lots"], "l5.q4": ["more", "fewer", "bigger"]}
CLOSE = {"l5.q3": [0, 32768], "l5.q2": [["transpose_all_users_slice", "slice_transpose"]]}
