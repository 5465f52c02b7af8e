// The Trigger.dev scenarios: what the user says each turn and the
// executeCode calls the scripted model makes. Played by scripts/conversation.mjs.
export const ORDERS_CSV = "order,amount\nA-1001,120.50\nA-1002,79.25\n";

export function scenarios(floor) {
  return [
    {
      name: "trigger_two_turns",
      title: "Trigger.dev: two turns, one sandbox",
      teaches: "A chat.agent run keeps one sandbox for all its turns: the second turn's call sees the first turn's variables.",
      fixtures: ["orders.csv (2 rows, written by the first call)"],
      runId: "run_trigger_two_turns",
      userId: "user-ada",
      floor,
      idleSeconds: 60,
      segments: [
        {
          turns: [
            {
              user: "Load orders.csv and tell me how many orders there are.",
              calls: [{ language: "python", code: "import csv\nrows = list(csv.DictReader(open('orders.csv')))\nlen(rows)", files: [{ path: "orders.csv", content: ORDERS_CSV }] }],
            },
            { user: "What is the total amount?", calls: [{ language: "python", code: "round(sum(float(r['amount']) for r in rows), 2)" }] },
          ],
        },
      ],
    },
    {
      name: "trigger_suspend",
      title: "Trigger.dev: suspend closes the sandbox",
      teaches: "When the run suspends after its idle window, onChatSuspend closes the sandbox; the next turn gets a fresh one and the old variables are gone.",
      fixtures: [],
      runId: "run_trigger_suspend",
      userId: "user-ada",
      floor,
      idleSeconds: 2,
      segments: [
        {
          turns: [{ user: "Remember the number 41 for me.", calls: [{ language: "python", code: "remembered = 41\nremembered" }] }],
          suspendAfter: true,
        },
        { turns: [{ user: "Add one to the number I gave you.", calls: [{ language: "python", code: "remembered + 1" }] }] },
      ],
    },
    {
      name: "trigger_guest_error",
      title: "Trigger.dev: a guest error is a result",
      teaches: "Code that raises comes back as an answer (exit code 1 with the traceback), the sandbox and its state live on, and the model can fix its code.",
      fixtures: [],
      runId: "run_trigger_guest_error",
      userId: "user-ada",
      floor,
      idleSeconds: 60,
      segments: [
        {
          turns: [
            {
              user: "Compute the average order value of an empty list of orders.",
              calls: [
                { language: "python", code: "orders = []\nsum(orders) / len(orders)" },
                { language: "python", code: "sum(orders) / len(orders) if orders else 0.0" },
              ],
            },
          ],
        },
      ],
    },
    {
      name: "trigger_floor_refused",
      title: "Trigger.dev: a floor above the tier is refused",
      teaches: "An agent that asks for the vm tier from a daemon that proves less is refused at the daemon before any sandbox exists: Nothing ran (isolation).",
      fixtures: [],
      runId: "run_trigger_floor_refused",
      userId: "user-ada",
      floor: "vm",
      idleSeconds: 60,
      segments: [{ turns: [{ user: "Print hello.", calls: [{ language: "python", code: "print('hello')" }] }] }],
    },
  ];
}
